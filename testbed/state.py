"""What `up` leaves in the state dir for others to use: testbed.json, known_hosts, site configs.

`load(config)` (or `load_dir(path)`) reads it back as `TestbedInfo`, which is what
tests and tools use to reach the sites: address, port, pinned host key, account keys.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gateway.siteconfig import SiteConfig, dump_site_config, validate_site_config
from gateway.siteconfig.loading import site_config_data
from testbed import wan
from testbed.config import TestbedConfig, TestbedError
from testbed.daemons import SSH_PORT
from testbed.files import SitePaths, fingerprint, host_key_line
from testbed.sites import ACCOUNTS, COMMUNITY, SiteSpec

STATE_FILE = "testbed.json"
SITE_CONFIGS = "site-configs"
SITE_CONFIGS_WAN = "site-configs-wan"


@dataclass(frozen=True)
class AccountInfo:
    """A Unix account at a site and the private key that logs into it."""

    name: str
    uid: int
    key: str  # path of the private key (0600)
    maps_to: str | None  # the gateway user it is mapped to; None for the community account


@dataclass(frozen=True)
class SiteInfo:
    """How to reach one running site."""

    name: str
    kind: str
    netns: str
    ip: str
    ssh_port: int
    host_key: str  # "ssh-ed25519 AAAA..."
    host_key_fingerprint: str
    known_hosts: str  # a known_hosts file with just this site's key
    site_config: str  # path of the completed site config YAML
    accounts: dict[str, AccountInfo]  # every Unix account of the site, by name
    community_account: str
    account_mode: str  # what the site config uses: community or mapped
    queues: list[dict[str, Any]]
    scratch_root: str
    parallel_environment: str | None
    holder_pid: int
    # The gateway end of the site's WAN link (testbed.wan), its round trip and rate; None
    # where the subnet has no room for one.
    wan_ip: str | None = None
    wan_rtt_ms: int | None = None
    wan_rate_mbit: float | None = None
    site_config_wan: str | None = None  # the site config that reaches it over the link

    def key(self, account: str) -> str:
        """Path of the private key of `account` at this site."""
        return self.accounts[account].key


@dataclass(frozen=True)
class TestbedInfo:
    """A running testbed, as its state dir describes it."""

    __test__ = False  # not a pytest test class, despite its name

    prefix: str
    subnet: str
    bridge: str
    bridge_ip: str
    state_dir: str
    known_hosts: str  # every site's host key
    site_configs: str  # directory of the completed site configs (GRIDGATE_SITE_CONFIGS_DIR)
    sites: dict[str, SiteInfo] = field(default_factory=dict)
    # The same site configs, each reaching its site over its WAN link.
    site_configs_wan: str | None = None


def site_info(config: TestbedConfig, site: SiteSpec, paths: SitePaths, holder: int) -> SiteInfo:
    """The facts of one site, from its spec and the files `up` made."""
    key_line = host_key_line(paths)
    accounts = site.template.accounts
    link = wan.link_of(site.name)
    return SiteInfo(
        name=site.name, kind=site.kind, netns=config.netns(site.name),
        ip=str(config.site_ip(site.index)), ssh_port=SSH_PORT,
        host_key=key_line, host_key_fingerprint=fingerprint(key_line),
        known_hosts=str(paths.known_hosts),
        site_config=str(config.state_dir / SITE_CONFIGS / f"{site.name}.yaml"),
        accounts={a.name: AccountInfo(a.name, a.uid, str(paths.key(a.name)), a.maps_to)
                  for a in ACCOUNTS},
        community_account=COMMUNITY.name,
        account_mode=accounts.mode.value if accounts is not None else "community",
        queues=[{"name": q.name, "max_seconds": q.max_seconds,
                 "default_seconds": q.default_seconds, "max_nodes": q.max_nodes,
                 "default": q.default, "cpus_per_node": site.cpus,
                 "memory_mb_per_node": site.memory_mb} for q in site.queues],
        scratch_root=site.scratch_root, parallel_environment=site.parallel_environment,
        holder_pid=holder,
        wan_ip=str(config.wan_ips(site.index)[0]) if config.has_wan else None,
        wan_rtt_ms=link.rtt_ms if config.has_wan else None,
        wan_rate_mbit=link.rate_mbit if config.has_wan else None,
        site_config_wan=str(config.state_dir / SITE_CONFIGS_WAN / f"{site.name}.yaml")
        if config.has_wan else None,
    )


def _key_ref(info: SiteInfo, user: str) -> dict[str, str]:
    return {"path": info.key(user)}


def completed_site_config(info: SiteInfo, spec: SiteSpec, *, over_wan: bool = False
                          ) -> SiteConfig:
    """The site's template with its address (its WAN link's, `over_wan`), pinned host key
    and account keys filled in."""
    data = site_config_data(spec.template)
    data["ssh"] = {**data.get("ssh", {}), "host": info.wan_ip if over_wan else info.ip,
                   "port": info.ssh_port, "host_keys": [info.host_key]}
    accounts = data.get("accounts")
    if accounts is not None:
        if "community" in accounts:
            community = accounts["community"]
            accounts["community"] = {**community, "key": _key_ref(info, community["user"])}
        for gateway_user, account in accounts.get("mapped", {}).items():
            accounts["mapped"][gateway_user] = {**account,
                                                "key": _key_ref(info, account["user"])}
    return validate_site_config(data, (info.site_config_wan if over_wan else None)
                                or info.site_config)


def write(config: TestbedConfig, infos: list[tuple[SiteSpec, SiteInfo]]) -> TestbedInfo:
    """Write testbed.json, known_hosts and the site configs; return what was written."""
    state = config.state_dir
    configs = state / SITE_CONFIGS
    configs.mkdir(parents=True, exist_ok=True)
    for spec, info in infos:
        site_json = Path(info.known_hosts).with_name("site.json")
        site_json.write_text(json.dumps(asdict(info), indent=2) + "\n")
        header = (f"# Written by `gridgate testbed up` from site-configs/{spec.name}.yaml; "
                  "do not edit.\n")
        Path(info.site_config).write_text(
            header + dump_site_config(completed_site_config(info, spec)))
        if info.site_config_wan is not None:
            Path(info.site_config_wan).parent.mkdir(parents=True, exist_ok=True)
            Path(info.site_config_wan).write_text(header + dump_site_config(
                completed_site_config(info, spec, over_wan=True)))
    known = state / "known_hosts"
    known.write_text("".join(f"{i.ip} {i.host_key}\n" for _, i in infos))
    tb = TestbedInfo(
        prefix=config.prefix, subnet=str(config.subnet), bridge=config.bridge,
        bridge_ip=str(config.bridge_ip), state_dir=str(state), known_hosts=str(known),
        site_configs=str(configs), sites={i.name: i for _, i in infos},
        site_configs_wan=str(state / SITE_CONFIGS_WAN) if config.has_wan else None)
    tmp = state / f"{STATE_FILE}.tmp"
    tmp.write_text(json.dumps(asdict(tb), indent=2) + "\n")
    tmp.replace(state / STATE_FILE)
    return tb


def load_dir(state_dir: Path) -> TestbedInfo:
    """Read a testbed's testbed.json."""
    path = state_dir / STATE_FILE
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise TestbedError(f"no testbed state at {path}: run `gridgate testbed up`") from exc
    sites = {}
    for name, s in raw.pop("sites").items():
        s["accounts"] = {a: AccountInfo(**v) for a, v in s["accounts"].items()}
        sites[name] = SiteInfo(**s)
    return TestbedInfo(**raw, sites=sites)


def load(config: TestbedConfig) -> TestbedInfo:
    """The state of the testbed named by `config`."""
    return load_dir(config.state_dir)
