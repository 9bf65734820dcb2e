"""Caps on long-lived response streams (`follow=true` output, the event stream): per user,
per process.

A user's slots are `flock`ed files in the data directory, so the cap holds across every
server process of one host (`serve --processes N` shares the data directory) and the
kernel frees a slot when its process dies, however it dies. The per-process cap is a
plain counter: it protects this process's poll threads and file descriptors.

Finding a free slot: the locks decide, but this process remembers which of a user's slot
files it holds (it never tries those again) and where its last search for that user
ended (the next one starts there). Opening a user's n-th stream so tries about one file,
not n (1,000 streams of one user cost 500,000 opens when every search began at 0).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal


class SlotRefused(Exception):
    """No slot is free: `scope` says whose cap was reached."""

    def __init__(self, scope: Literal["user", "process"], cap: int) -> None:
        super().__init__(f"{scope} stream cap {cap} reached")
        self.scope, self.cap = scope, cap


@dataclass
class _UserSlots:
    """This process's view of one user's slot files."""

    held: set[int] = field(default_factory=set)  # indices this process has locked
    start: int = 0  # where the next search begins


class StreamSlot:
    """A held slot; `release()` (idempotent) gives it back."""

    def __init__(self, owner: StreamSlots, user: str, index: int, fd: int) -> None:
        self._owner, self._user, self.index, self._fd = owner, user, index, fd

    def release(self) -> None:
        if self._fd < 0:
            return
        os.close(self._fd)  # closing the descriptor drops the flock
        self._fd = -1
        self._owner._released(self._user, self.index)


class StreamSlots:
    """At most `per_user` streams of one user on this host, `per_process` in this process.

    Used from one thread (the event loop): acquire and release are not locked."""

    def __init__(self, directory: Path, per_user: int, per_process: int) -> None:
        self.directory, self.per_user, self.per_process = directory, per_user, per_process
        self.in_use = 0
        self._users: dict[str, _UserSlots] = {}
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)

    def acquire(self, user_id: str) -> StreamSlot:
        """A free slot for `user_id`, or SlotRefused. Runs on the event loop: a few
        non-blocking syscalls on a local file, no waiting."""
        if self.in_use >= self.per_process:
            raise SlotRefused("process", self.per_process)
        # User ids come from tokens' subjects too: hash them into safe file names.
        user = hashlib.sha256(user_id.encode()).hexdigest()[:32]
        mine = self._users.setdefault(user, _UserSlots())
        for step in range(self.per_user):
            index = (mine.start + step) % self.per_user
            if index in mine.held:
                continue  # ours already: locking it again would fail
            fd = os.open(self.directory / f"{user}.{index}",
                         os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                # flock conflicts between open file descriptions, in this process too:
                # another process's slots are found here.
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            mine.held.add(index)
            mine.start = (index + 1) % self.per_user
            self.in_use += 1
            return StreamSlot(self, user, index, fd)
        if not mine.held:
            del self._users[user]
        raise SlotRefused("user", self.per_user)

    def _released(self, user: str, index: int) -> None:
        self.in_use -= 1
        mine = self._users[user]
        mine.held.discard(index)
        if mine.held:
            mine.start = index  # known free a moment ago: the next search tries it first
        else:
            del self._users[user]  # forget users with no stream here
