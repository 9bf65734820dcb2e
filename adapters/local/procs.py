"""Linux process facts from /proc: identity that survives pid reuse, sessions, descendants.

A pid alone can be recycled, so a process is identified by (pid, start time): the
kernel's field 22 of /proc/PID/stat, in clock ticks since boot, never changes for
the life of a process. Zombies count as dead: they have run their course.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
from collections.abc import Iterable
from dataclasses import dataclass

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class ProcStat:
    """The few fields of /proc/PID/stat that supervision needs."""

    pid: int
    state: str
    ppid: int
    pgrp: int
    session: int
    start_time: int

    @property
    def is_zombie(self) -> bool:
        return self.state in ("Z", "X")


def read_stat(pid: int) -> ProcStat | None:
    """The process's stat line, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read().decode("utf-8", "replace")
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name may contain spaces and parentheses: split after the last ')'.
    rest = raw[raw.rfind(")") + 2 :].split()
    return ProcStat(
        pid=pid,
        state=rest[0],
        ppid=int(rest[1]),
        pgrp=int(rest[2]),
        session=int(rest[3]),
        start_time=int(rest[19]),
    )


@dataclass(frozen=True)
class ProcessId:
    """A process that cannot be confused with a later one reusing its pid."""

    pid: int
    start_time: int

    @classmethod
    def of(cls, pid: int) -> ProcessId | None:
        """The identity of a live (or not yet reaped) process."""
        stat = read_stat(pid)
        return None if stat is None else cls(pid, stat.start_time)

    @classmethod
    def current(cls) -> ProcessId:
        me = cls.of(os.getpid())
        if me is None:  # pragma: no cover - /proc/self always exists on Linux
            raise RuntimeError("cannot read /proc/self/stat")
        return me

    def is_alive(self) -> bool:
        """True while this very process runs (not a zombie, not a pid reuse)."""
        stat = read_stat(self.pid)
        return stat is not None and not stat.is_zombie and stat.start_time == self.start_time

    def to_json(self) -> dict[str, int]:
        return {"pid": self.pid, "start_time": self.start_time}

    @classmethod
    def from_json(cls, data: object) -> ProcessId:
        if not isinstance(data, dict):
            raise ValueError("process record is not an object")
        pid, start = data.get("pid"), data.get("start_time")
        if not isinstance(pid, int) or not isinstance(start, int) or pid <= 0:
            raise ValueError("process record needs integer pid and start_time")
        return cls(pid, start)


def all_processes() -> list[ProcStat]:
    """Every process visible in /proc (a snapshot; entries may vanish meanwhile)."""
    result = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            stat = read_stat(int(name))
            if stat is not None:
                result.append(stat)
    return result


def job_processes(leader: ProcessId | None, ancestor: int | None) -> list[int]:
    """Live pids in the session `leader` started, or descending from `ancestor`.

    The session covers a job whose supervisor is gone; descent from the
    supervisor (a child subreaper) also covers processes that left the session.
    A session id stays reserved while any member lives, so once `leader.pid`
    belongs to some other process the old session is empty and is skipped.
    """
    procs = all_processes()
    children: dict[int, list[int]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p.pid)
    found: set[int] = set()
    if ancestor is not None:
        todo = list(children.get(ancestor, []))
        while todo:
            pid = todo.pop()
            if pid not in found:
                found.add(pid)
                todo.extend(children.get(pid, []))
    if leader is not None:
        holder = read_stat(leader.pid)
        if holder is None or holder.start_time == leader.start_time:
            found.update(p.pid for p in procs if p.session == leader.pid)
    live = {p.pid for p in procs if not p.is_zombie}
    found.discard(os.getpid())
    return sorted(found & live)


def sandbox_launchers(leader: ProcessId | None) -> set[int]:
    """bwrap's own processes of a sandboxed job: the leader and the namespace's init.

    A TERM meant for the program must spare them: bwrap would die of it at once and,
    dying, SIGKILL the whole sandbox, leaving the program no grace period.
    """
    if leader is None or not leader.is_alive():
        return set()
    return {leader.pid} | {p.pid for p in all_processes() if p.ppid == leader.pid}


def signal_processes(pids: Iterable[int], sig: signal.Signals) -> None:
    """Send `sig` to each pid, ignoring those already gone."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def signal_group(pgid: int, sig: signal.Signals) -> None:
    """Send `sig` to a process group, ignoring an empty group."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _prctl(option: int, value: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(option, value, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))


def become_subreaper() -> None:
    """Adopt orphaned descendants, so they can be found, killed and reaped."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


def die_with_parent(sig: signal.Signals) -> None:
    """In a freshly forked child: receive `sig` when the parent dies."""
    _prctl(_PR_SET_PDEATHSIG, int(sig))
