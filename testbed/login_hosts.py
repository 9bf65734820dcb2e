"""More login hosts in front of a running site (issue 32): how one machine holds a
federation of 40 distant sites.

Each login host is an sshd of its own in the site's namespaces (its own port, its own
ed25519 host key, the site's accounts and scheduler behind it) reached over a link of its
own: a Toxiproxy proxy on a loopback port with the host's round trip (testbed.wan; no
rate limit: what these hosts are for, status and submission, is bound by round trips).
Give each a site config of its own and the gateway sees as many sites, all in front of
one real scheduler.

They end with the site (its PID namespace) or with `stop`.
"""

from __future__ import annotations

import contextlib
import ipaddress
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from testbed import render, wan
from testbed.config import TestbedConfig, TestbedError
from testbed.holder import nsexec, site_path
from testbed.state import SiteInfo

FIRST_PORT = 2201


@dataclass(frozen=True)
class LoginHost:
    """One extra login host: where the gateway reaches it, its key, its link."""

    name: str
    link: str  # its link's name (testbed.wan: black_hole, set_delay)
    host: str
    port: int
    host_key: str  # "ssh-ed25519 AAAA..."
    rtt_ms: int


# Where a site keeps its login hosts' files, as the site sees it (its /etc is its own).
IN_SITE_DIR = "/etc/ssh/gridgate-login-hosts"


def start(config: TestbedConfig, site: SiteInfo, rtts: list[int],
          prefix: str = "login") -> list[LoginHost]:
    """One login host per round trip in `rtts` (ms), named `{prefix}{n:02d}`."""
    base = site_path(site.holder_pid, IN_SITE_DIR)  # the same directory, from out here
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    hosts = []
    for n, rtt in enumerate(rtts):
        name = f"{prefix}{n:02d}"
        port = FIRST_PORT + n
        key = base / f"{name}_host_ed25519"
        if not key.exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name,
                            "-f", str(key)], check=True, capture_output=True)
        (base / f"{name}.sshd_config").write_text(render.sshd_config(
            ipaddress.IPv4Address(site.ip), port,
            host_key=f"{IN_SITE_DIR}/{key.name}", pid_file=f"/run/sshd-{name}.pid"))
        nsexec(site.holder_pid, ["/usr/sbin/sshd", "-f", f"{IN_SITE_DIR}/{name}.sshd_config",
                                 "-E", f"/var/log/sshd-{name}.log"])
        link = f"{site.name}-{name}"
        listen = wan.add_proxy(config, link, f"{site.ip}:{port}", rtt)
        host, _, proxy_port = listen.rpartition(":")
        public = key.with_suffix(".pub").read_text().split()
        hosts.append(LoginHost(name=name, link=link, host=host, port=int(proxy_port),
                               host_key=f"{public[0]} {public[1]}", rtt_ms=rtt))
    return hosts


def stop(config: TestbedConfig, site: SiteInfo, hosts: list[LoginHost]) -> None:
    """Stop these login hosts' sshds and remove their links."""
    for host in hosts:
        wan.remove_proxy(config, host.link)
        with contextlib.suppress(TestbedError):  # gone already (the site went down)
            nsexec(site.holder_pid, ["sh", "-c", 'kill "$(cat "$1")"', "stop",
                                     f"/run/sshd-{host.name}.pid"])


def spread(count: int, low_ms: int, high_ms: int) -> list[int]:
    """`count` round trips spread evenly from `low_ms` to `high_ms`."""
    if count == 1:
        return [low_ms]
    return [round(low_ms + i * (high_ms - low_ms) / (count - 1)) for i in range(count)]


def site_config(site: SiteInfo, host: LoginHost, name: str) -> dict[str, Any]:
    """The site's own config as a site named `name` reached at `host` (its address and
    pinned host key)."""
    data: dict[str, Any] = yaml.safe_load(Path(site.site_config).read_text())
    return {**data, "name": name, "ssh": {**data["ssh"], "host": host.host, "port": host.port,
                                          "host_keys": [host.host_key]}}
