"""A site's holder: PID 1 of the site's PID namespace, owner of its mounts and hostname.

Started as `nsenter --net=/run/netns/NS unshare --mount --uts --ipc --pid --fork
--mount-proc --propagation private /bin/sh STATE/sites/SITE/holder.sh`. The script
sets the hostname, bind-mounts the site's private files over the standard paths,
mounts a fresh /run and /dev/shm, then reaps orphans forever. Daemons join it with
`nsenter -t HOLDER -m -u -i -n -p`. Killing the holder (SIGKILL) makes the kernel
kill every process of the site and drops its mounts.

A holder is recognised by its exact command line, `/bin/sh <its script path>`: the
path contains the state dir and thus the prefix, so a pid can never be mistaken for
another process (nor for another testbed's holder).
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from testbed.config import TestbedError
from testbed.render import HOLDER_READY
from testbed.sites import SiteSpec

CLEAN_ENV: Mapping[str, str] = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
    "HOME": "/root",
}
# Directories only: the host may replace any file of its own (useradd renames a new
# /etc/passwd into place), which would detach a bind mount on that file (files.py).
COMMON_BINDS = ("etc", "home", "tmp", "var/tmp", "var/log")
SLURM_BINDS = ("var/lib/munge", "var/lib/slurm", "var/lib/mysql")
SGE_BINDS = ("var/lib/gridengine/default", "var/spool/gridengine")
# The launchers this process started, by holder pid. `unshare --fork` waits for its holder,
# so a launcher runs as long as its site: kept here (a dropped running Popen warns) and
# reaped by kill_holder once the holder is gone.
_launchers: dict[int, subprocess.Popen[bytes]] = {}


def bind_paths(site: SiteSpec) -> tuple[str, ...]:
    """Paths (relative to /) that the site sees from its private root instead of the host's."""
    return COMMON_BINDS + (SLURM_BINDS if site.kind == "slurm" else SGE_BINDS)


def holder_script(site: SiteSpec, root: Path) -> str:
    """The holder's shell script; `root` is the site's private tree on the host."""
    binds = "\n".join(
        f"mount --bind {shlex.quote(str(root / p))} /{p}" for p in bind_paths(site))
    return f"""\
#!/bin/sh
# gridgate testbed holder for site {site.name}: PID 1 of the site's PID namespace.
set -eu
hostname {site.name}
{binds}
# Private /run and /dev/shm: sockets, pid files and shared memory stay inside the site.
mount -t tmpfs -o mode=0755,nosuid,nodev gridgate-run /run
mount -t tmpfs -o mode=1777,nosuid,nodev gridgate-shm /dev/shm
mkdir -p /run/sshd /run/munge /run/mysqld /run/lock
chmod 0755 /run/sshd
# munged needs its socket directory world-executable.
chown munge:munge /run/munge && chmod 0755 /run/munge
chown mysql:mysql /run/mysqld
: > {HOLDER_READY}
# As PID 1, reap the orphans the site's daemons leave behind, forever.
while :; do sleep 3600 & wait; done
"""


def holder_argv(script: Path) -> list[str]:
    return ["/bin/sh", str(script)]


def _cmdline(pid: int) -> list[str] | None:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return raw.decode("utf-8", "replace").split("\0")[:-1]


def _state(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rfind(")") + 2:].split(" ", 1)[0]


def alive(pid: int) -> bool:
    """Whether `pid` exists and is not a zombie."""
    return _state(pid) not in (None, "Z", "X")


def is_holder(pid: int, script: Path) -> bool:
    """Whether `pid` is a live holder running exactly `script`."""
    return alive(pid) and _cmdline(pid) == holder_argv(script)


def _all_pids() -> Iterable[int]:
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            yield int(entry.name)


def find_holders(script: Path) -> list[int]:
    """The live processes running `script` as a holder (normally zero or one)."""
    return [pid for pid in _all_pids() if is_holder(pid, script)]


def start_holder(netns: Path, site: SiteSpec, script: Path, log: Path,
                 timeout: float = 10.0) -> int:
    """Start the site's holder in `netns`; return its pid once its mounts are ready."""
    argv = ["nsenter", f"--net={netns}", "--", "unshare", "--mount", "--uts", "--ipc",
            "--pid", "--fork", "--mount-proc", "--propagation", "private", "--",
            *holder_argv(script)]
    with open(log, "ab") as out:
        # A new session: the holder outlives the command that started it.
        launcher = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                    cwd="/", env=dict(CLEAN_ENV), start_new_session=True)
    deadline = time.monotonic() + timeout
    pid: int | None = None
    while time.monotonic() < deadline:
        if pid is None:
            found = find_holders(script)
            pid = found[0] if found else None
        if pid is not None and Path(f"/proc/{pid}/root{HOLDER_READY}").exists():
            _launchers[pid] = launcher
            return pid
        if launcher.poll() is not None:
            raise TestbedError(
                f"{site.name}: the holder exited (rc {launcher.returncode}): {_tail(log)}")
        time.sleep(0.01)
    if pid is not None:
        _launchers[pid] = launcher
        kill_holder(pid, script)
    raise TestbedError(f"{site.name}: the holder did not get ready in {timeout:.0f}s: "
                       f"{_tail(log)}")


def kill_holder(pid: int, script: Path, timeout: float = 10.0) -> bool:
    """SIGKILL the holder (and so every process of its site) if `pid` really is it.

    Returns False, killing nothing, when `pid` is not a holder of `script`.
    """
    if not is_holder(pid, script):
        _reap_launcher(pid, timeout)
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        _reap_launcher(pid, timeout)
        return True
    deadline = time.monotonic() + timeout
    # The kernel kills the rest of the PID namespace before the holder can be reaped.
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    if alive(pid):
        raise TestbedError(f"holder {pid} ({script}) survived SIGKILL for {timeout:.0f}s")
    _reap_launcher(pid, timeout)
    return True


def _reap_launcher(holder: int, timeout: float) -> None:
    """Wait for the launcher of a dead holder, if this process started it."""
    launcher = _launchers.pop(holder, None)
    if launcher is None:
        return
    try:
        launcher.wait(timeout)
    except subprocess.TimeoutExpired:
        _launchers[holder] = launcher
        raise TestbedError(f"the launcher of holder {holder} (pid {launcher.pid}) did not "
                           f"exit in {timeout:.0f}s after it") from None


def site_processes(holder: int) -> dict[int, str]:
    """{pid inside the site: comm} of every live process of the site (its own /proc)."""
    procs: dict[int, str] = {}
    base = Path(f"/proc/{holder}/root/proc")
    try:
        entries = list(os.scandir(base))
    except OSError:
        return procs
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            comm = (base / entry.name / "comm").read_text().strip()
            stat = (base / entry.name / "stat").read_text()
        except OSError:
            continue
        if stat[stat.rfind(")") + 2:].split(" ", 1)[0] not in ("Z", "X"):
            procs[int(entry.name)] = comm
    return procs


def site_path(holder: int, path: str) -> Path:
    """A path as the site sees it, reached from the root namespace through the holder."""
    return Path(f"/proc/{holder}/root{path}")


def nsenter_argv(holder: int, argv: Sequence[str]) -> list[str]:
    """`argv` run inside the site (its mounts, hostname, IPC, network and PIDs)."""
    return ["nsenter", "-t", str(holder), "-m", "-u", "-i", "-n", "-p", "-r", "-w",
            "--", *argv]


def nsexec(holder: int, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
           log: Path | None = None, input_text: str | None = None,
           timeout: float = 60.0, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `argv` inside the site and wait for it (daemons return once they fork).

    With `log`, stdout and stderr go to that file (daemons keep it); otherwise they are
    captured and returned.
    """
    full_env = {**CLEAN_ENV, **(env or {})}
    cmd = nsenter_argv(holder, argv)
    if log is not None:
        with open(log, "ab") as out:
            proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=out,
                                  env=full_env, timeout=timeout, check=False)
        result = subprocess.CompletedProcess(cmd, proc.returncode, "", "")
    else:
        result = subprocess.run(cmd, input=input_text, capture_output=True, text=True,
                                env=full_env, timeout=timeout, check=False)
    if check and result.returncode != 0:
        detail = (result.stderr or result.stdout).strip() or (
            _tail(log) if log is not None else "")
        raise TestbedError(f"{' '.join(argv)} failed (rc {result.returncode}): {detail}")
    return result


def _tail(path: Path | None, lines: int = 8) -> str:
    if path is None:
        return ""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return " | ".join(text.strip().splitlines()[-lines:])
