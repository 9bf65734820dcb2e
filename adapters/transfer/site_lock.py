"""A lock on the site, per cache entry, so that gateway processes staging the same content
to one site at once send it once: the first holds `<cache>/.<sha256>.gw-lock` (a directory:
mkdir is atomic on every file system, NFS included) while it sends; the others wait, then
find the entry in the cache.

Crash-safe: the holder writes who it is into the lock (`holder`: this machine's boot id,
its pid and the pid's start time). A gateway process on the same machine that finds the
lock held by a process that no longer runs breaks it at once (a gateway killed mid-send and
restarted goes on without waiting). Otherwise: the holder refreshes the lock's time while it
sends (`touch`, at most every `refresh` seconds); a lock not refreshed for `stale_after`
seconds (by the site's clock) is left by a dead process and is broken. Two processes
breaking one lock at once may both go on: then both send, and verification on the site
keeps the cache intact (the lock saves transfers; it is not what keeps content correct).
A wait longer than `max_wait` raises SiteUnavailable (transient): the job is staged again
later.
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from adapters.errors import SiteUnavailable
from adapters.transfer import site_fs
from adapters.transport import Transport

log = logging.getLogger("adapters.transfer")

STALE_AFTER = 300.0
REFRESH = 60.0
MAX_WAIT = 120.0
POLL = 1.0
# "$1" the lock, "$2" seconds without refresh after which it is stale, "$3" who takes it:
# data, never code. Answers `taken`, `stale` (broken), `gone`, or `held` and the holder
# (none while the holder is releasing: its `holder` file is gone, the directory not yet).
TAKE_SCRIPT = ('if mkdir -m 700 -- "$1" 2>/dev/null; then '
                'printf "%s\\n" "$3" > "$1/holder"; echo taken; exit 0; fi; '
                'now=$(date +%s); then=$(stat -c %Y -- "$1" 2>/dev/null) || '
                '{ echo gone; exit 0; }; '
                'if [ $((now - then)) -gt "$2" ]; then rm -f -- "$1/holder"; '
                'rmdir -- "$1" 2>/dev/null; echo stale; '
                'else echo held; cat -- "$1/holder" 2>/dev/null; fi; exit 0')
# Breaks the lock "$1" only while "$2" (a holder known to be dead) still holds it.
_BREAK_SCRIPT = ('[ "$(cat -- "$1/holder" 2>/dev/null)" = "$2" ] && rm -f -- "$1/holder" '
                 '&& rmdir -- "$1" 2>/dev/null; exit 0')
_RELEASE_SCRIPT = 'rm -f -- "$1/holder"; rmdir -- "$1"'


def lock_name(cache_dir: str, sha256: str) -> str:
    return posixpath.join(cache_dir, f".{sha256}.gw-lock")


class SiteLock:
    """The held lock; `touch` keeps it fresh (cheap to call often)."""

    def __init__(self, transport: Transport, path: str, refresh: float,
                 clock: Callable[[], float]) -> None:
        self.transport, self.path, self.refresh, self.clock = transport, path, refresh, clock
        self.touched = clock()
        self.released = False

    def touch(self) -> None:
        if self.clock() - self.touched >= self.refresh:
            self.touched = self.clock()
            self.transport.run(["touch", "-c", "--", self.path],
                               timeout=site_fs.COMMAND_TIMEOUT)

    def removed_by_caller(self) -> None:
        """The holder's last command on the site removed the lock directory itself (one
        round trip fewer): leaving `hold` then does nothing more."""
        self.released = True


@contextlib.contextmanager
def hold(transport: Transport, cache_dir: str, sha256: str, *, answer: str | None = None,
         stale_after: float = STALE_AFTER, refresh: float = REFRESH,
         max_wait: float = MAX_WAIT, poll: float = POLL,
         clock: Callable[[], float] = time.monotonic,
         sleep: Callable[[float], None] = time.sleep) -> Iterator[SiteLock]:
    """Hold the site's lock on the cache entry `sha256` (see the module). `answer`: what
    TAKE_SCRIPT, already run by this process (adapters.transfer.claim), printed."""
    if not site_fs.is_sha256(sha256):
        raise ValueError(f"not a sha256 hex digest: {sha256!r}")
    path = lock_name(cache_dir, sha256)
    me = own_holder()
    deadline = clock() + max_wait
    while True:
        if answer is None:
            answer = site_fs.output(transport, ["sh", "-c", TAKE_SCRIPT, "gridgate-lock",
                                                path, str(int(stale_after)), me]).strip()
        if answer == "taken":
            break
        if answer.startswith("held"):
            holder = answer.removeprefix("held").strip()
            if holder and holder_is_dead(holder):
                log.warning("staging lock %s was left by %s, which has ended; breaking it",
                            path, holder)
                site_fs.output(transport, ["sh", "-c", _BREAK_SCRIPT, "gridgate-lock", path,
                                           holder])
            elif clock() >= deadline:
                raise SiteUnavailable(f"another gateway process has been staging {sha256} "
                                      f"to this site for over {int(max_wait)} s; will retry")
            else:
                sleep(poll)
        # "stale" (broken just now) or "gone" (released meanwhile): try again at once.
        answer = None
    lock = SiteLock(transport, path, refresh, clock)
    try:
        yield lock
    finally:
        if not lock.released:
            transport.run(["sh", "-c", _RELEASE_SCRIPT, "gridgate-unlock", path],
                          timeout=site_fs.COMMAND_TIMEOUT)


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (stat field 22); None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ")".
    return stat.rsplit(")", 1)[1].split()[19]


def own_holder() -> str:
    """Who this process is, as written into the locks it takes."""
    pid = os.getpid()
    return f"{_boot_id() or 'unknown'}:{pid}:{_start_time(pid) or 0}"


def holder_is_dead(holder: str) -> bool:
    """True only when `holder` ran on this machine since its last boot and has ended (its
    pid gone or reused by a later process); a holder elsewhere is never judged here."""
    boot, _, rest = holder.partition(":")
    pid, _, started = rest.partition(":")
    if not boot or boot == "unknown" or boot != _boot_id() or not pid.isdigit():
        return False
    return _start_time(int(pid)) != started
