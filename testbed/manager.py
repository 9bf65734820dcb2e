"""`up`, `down` and `status` of a testbed (root only).

`up` is idempotent: a healthy site is left as it is, a site missing daemons gets
them started, a site whose holder or network is gone is rebuilt (keeping its keys), saying
why in its progress and in the holder's log.
Sites come up in parallel. `down` kills each holder (after checking its command
line), deletes veths, namespaces and the bridge, then the state dir.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from testbed import network, wan
from testbed.config import TestbedConfig, TestbedError
from testbed.daemons import SSH_PORT, SiteDaemons, tcp_open
from testbed.files import SitePaths, fingerprint, host_key_line, prepare_site
from testbed.holder import (
    find_holders,
    holder_script,
    kill_holder,
    site_processes,
    start_holder,
)
from testbed.install import missing_packages
from testbed.sites import SITE_REFS, SiteId, SiteSpec, load_sites
from testbed.state import TestbedInfo, site_info, write

Progress = Callable[[str], None]


def require_root() -> None:
    """Raise a clear TestbedError unless running as root."""
    if os.geteuid() != 0:
        raise TestbedError(
            "the testbed needs root (network namespaces, bind mounts, daemons): "
            "run `sudo gridgate testbed ...`")


LOCK_FILE = Path("/run/lock/gridgate-testbed.lock")


@contextlib.contextmanager
def _locked() -> Iterator[None]:
    """Serialise every testbed's up and down on this machine (they share /run/netns)."""
    LOCK_FILE.parent.mkdir(parents=True, exist_ok=True)
    with open(LOCK_FILE, "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _quiet(_: str) -> None:
    pass


# --- up ------------------------------------------------------------------------------

def up(config: TestbedConfig, sites: Sequence[SiteSpec] | None = None,
       progress: Progress = _quiet) -> TestbedInfo:
    """Bring every site up (or repair it); return the testbed's state.

    `sites` defaults to the three sites of the repository's templates (`load_sites()`).
    """
    require_root()
    sites = load_sites() if sites is None else sites
    missing = missing_packages()
    if missing:
        raise TestbedError(
            f"testbed packages missing: {' '.join(missing)}; install them with "
            "`python3 -m testbed.install` (as root)")
    with _locked():
        network.ensure_bridge(config)
        with ThreadPoolExecutor(max_workers=len(sites)) as pool:
            futures = [pool.submit(_up_site, config, site, progress) for site in sites]
            errors = []
            holders = []
            for site, future in zip(sites, futures, strict=True):
                try:
                    holders.append(future.result())
                except (TestbedError, OSError, subprocess.SubprocessError) as exc:
                    errors.append(str(exc) if str(exc).startswith(f"{site.name}:")
                                  else f"{site.name}: {exc}")
        if errors:
            raise TestbedError("testbed up failed:\n  " + "\n  ".join(errors))
        wan.ensure(config, list(sites))
        infos = [(s, site_info(config, s, SitePaths(config, s), holder))
                 for s, holder in zip(sites, holders, strict=True)]
        return write(config, infos)


def _holder_problem(config: TestbedConfig, site: SiteSpec, holders: list[int]) -> str | None:
    """Why the site needs a new holder (and namespace), or None when it does not."""
    if len(holders) != 1:
        return f"{len(holders)} holders running {holders}" if holders else "no holder running"
    return network.site_net_problem(config, site)


def _up_site(config: TestbedConfig, site: SiteSpec, progress: Progress) -> int:
    started = time.monotonic()
    paths = prepare_site(config, site)
    script = paths.holder_script
    text = holder_script(site, paths.root)
    if not script.exists() or script.read_text() != text:
        script.write_text(text)
    holders = find_holders(script)
    problem = _holder_problem(config, site, holders)
    holder = holders[0] if problem is None else None
    if holder is None:
        # Said in the holder's log too: a rebuild nobody asked for is evidence of a fault.
        with open(paths.log("holder"), "a") as log:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} up: (re)starting the holder: "
                      f"{problem}\n")
        if holders:
            progress(f"{site.name}: rebuilding: {problem}")
        for pid in holders:
            kill_holder(pid, script)
        network.create_site_net(config, site)
        network.create_wan_net(config, site, wan.link_of(site.name).rate_mbit)
        holder = start_holder(network.netns_path(config.netns(site.name)), site, script,
                              paths.log("holder"))
        progress(f"{site.name}: namespace {config.netns(site.name)}, holder {holder}")
    paths.holder_pid.write_text(f"{holder}\n")
    SiteDaemons(config, site, paths, holder, progress).ensure()
    progress(f"{site.name}: up at {config.site_ip(site.index)} "
             f"({time.monotonic() - started:.1f}s)")
    return holder


# --- down ----------------------------------------------------------------------------

@dataclass
class DownReport:
    """What `down` removed."""

    holders_killed: list[int] = field(default_factory=list)
    netns_deleted: list[str] = field(default_factory=list)
    links_deleted: list[str] = field(default_factory=list)
    state_dir_removed: bool = False


def down(config: TestbedConfig, sites: Sequence[SiteId] = SITE_REFS) -> DownReport:
    """Remove everything the testbed with this prefix made; safe to repeat."""
    require_root()
    report = DownReport()
    with _locked():
        for site in sites:
            paths = SitePaths(config, site)
            for pid in find_holders(paths.holder_script):
                if kill_holder(pid, paths.holder_script):
                    report.holders_killed.append(pid)
        before_links = set(network.testbed_links(config))
        before_ns = set(network.testbed_netns(config))
        for site in sites:
            network.remove_site_net(config, site)
        network.remove_bridge(config)
        wan.stop(config)
        report.links_deleted = sorted(before_links - set(network.testbed_links(config)))
        report.netns_deleted = sorted(before_ns - set(network.testbed_netns(config)))
        if config.state_dir.exists():
            shutil.rmtree(config.state_dir)
            report.state_dir_removed = True
        with contextlib.suppress(OSError):
            config.state_root.rmdir()  # only when no other testbed uses it
        network.release_netns_dir()
    return report


# --- status --------------------------------------------------------------------------

@dataclass
class SiteStatus:
    """One site as it is now."""

    name: str
    kind: str
    netns: str
    netns_exists: bool
    ip: str
    ssh_port: int
    holder_pid: int | None
    daemons: dict[str, bool]
    ssh_open: bool
    host_key_fingerprint: str | None

    @property
    def healthy(self) -> bool:
        return (self.netns_exists and self.holder_pid is not None
                and all(self.daemons.values()) and self.ssh_open)


@dataclass
class TestbedStatus:
    """The testbed as it is now."""

    __test__ = False  # not a pytest test class, despite its name

    prefix: str
    subnet: str
    bridge: str
    bridge_exists: bool
    state_dir: str
    sites: list[SiteStatus]

    @property
    def healthy(self) -> bool:
        return self.bridge_exists and all(s.healthy for s in self.sites)

    @property
    def anything_left(self) -> bool:
        """Whether any process, namespace or link of the testbed exists."""
        return self.bridge_exists or any(
            s.netns_exists or s.holder_pid is not None for s in self.sites)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["healthy"] = self.healthy
        for site, status in zip(data["sites"], self.sites, strict=True):
            site["healthy"] = status.healthy
        return data


def status(config: TestbedConfig, sites: Sequence[SiteSpec] | None = None) -> TestbedStatus:
    """Look at every site without changing anything."""
    require_root()
    sites = load_sites() if sites is None else sites
    actual = network.bridge_subnet(config)
    if actual is not None and actual.network != config.subnet:
        # Up on another subnet than asked for: report the addresses it really has.
        config = dataclasses.replace(config, subnet=actual.network)
    result = []
    for site in sites:
        paths = SitePaths(config, site)
        holders = find_holders(paths.holder_script)
        holder = holders[0] if holders else None
        running = set(site_processes(holder).values()) if holder else set()
        ip = str(config.site_ip(site.index))
        fp = None
        if paths.host_key_pub.exists():
            fp = fingerprint(host_key_line(paths))
        ns = config.netns(site.name)
        result.append(SiteStatus(
            name=site.name, kind=site.kind, netns=ns,
            netns_exists=network.netns_exists(ns), ip=ip, ssh_port=SSH_PORT,
            holder_pid=holder, daemons={d: d in running for d in site.daemons},
            ssh_open=holder is not None and tcp_open(ip, SSH_PORT),
            host_key_fingerprint=fp))
    return TestbedStatus(
        prefix=config.prefix, subnet=str(config.subnet), bridge=config.bridge,
        bridge_exists=network.link_exists(config.bridge), state_dir=str(config.state_dir),
        sites=result)

