"""Faults for live tests: stop a site's daemon, give a site a new host key.

`up` repairs both: it starts whatever daemon is missing, and a site whose host key
files are gone gets a new key (written, as always, to the state dir and site configs).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from testbed import manager
from testbed.config import TestbedConfig, TestbedError
from testbed.files import SitePaths
from testbed.holder import alive, find_holders
from testbed.sites import SiteSpec, load_sites
from testbed.state import TestbedInfo


def _holder(config: TestbedConfig, site: SiteSpec) -> int:
    holders = find_holders(SitePaths(config, site).holder_script)
    if not holders:
        raise TestbedError(f"{site.name} is not running: run `gridgate testbed up`")
    return holders[0]


def site_host_pids(holder: int) -> dict[int, str]:
    """{pid in the root namespace: comm} of every live process of the holder's site."""
    try:
        pid_ns = os.readlink(f"/proc/{holder}/ns/pid")
    except OSError:
        return {}
    found: dict[int, str] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == holder:
            continue
        try:
            if os.readlink(f"/proc/{entry.name}/ns/pid") != pid_ns:
                continue
            comm = Path(f"/proc/{entry.name}/comm").read_text().strip()
        except OSError:
            continue
        if alive(int(entry.name)):
            found[int(entry.name)] = comm
    return found


def stop_daemon(config: TestbedConfig, site_name: str, comm: str,
                sig: int = signal.SIGKILL, timeout: float = 10.0) -> list[int]:
    """Kill every process named `comm` in the site (sshd: the listener and its sessions).

    Returns the killed pids (root namespace) once they are gone. `up` starts it again.
    """
    site = next(s for s in load_sites() if s.name == site_name)
    holder = _holder(config, site)
    pids = [pid for pid, name in site_host_pids(holder).items() if name == comm]
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.01)
    return pids


def rotate_host_key(config: TestbedConfig, site_name: str) -> TestbedInfo:
    """Give the site a new sshd host key (sshd restarted); return the updated state.

    Clients that pinned the old key are refused from then on.
    """
    site = next(s for s in load_sites() if s.name == site_name)
    paths = SitePaths(config, site)
    for path in (paths.host_key, paths.host_key.with_name(paths.host_key.name + ".pub")):
        path.unlink(missing_ok=True)
    stop_daemon(config, site_name, "sshd")
    return manager.up(config)
