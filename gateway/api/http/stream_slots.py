"""Caps on long-lived response streams (`follow=true` output, the event stream): per user,
per process.

A user's slots are `flock`ed files in the data directory, so the cap holds across every
server process of one host (`serve --processes N` shares the data directory) and the
kernel frees a slot when its process dies, however it dies. The per-process cap is a
plain counter: it protects this process's poll threads and file descriptors.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
from pathlib import Path
from typing import Literal


class SlotRefused(Exception):
    """No slot is free: `scope` says whose cap was reached."""

    def __init__(self, scope: Literal["user", "process"], cap: int) -> None:
        super().__init__(f"{scope} stream cap {cap} reached")
        self.scope, self.cap = scope, cap


class StreamSlot:
    """A held slot; `release()` (idempotent) gives it back."""

    def __init__(self, owner: StreamSlots, fd: int) -> None:
        self._owner, self._fd = owner, fd

    def release(self) -> None:
        if self._fd < 0:
            return
        os.close(self._fd)  # closing the descriptor drops the flock
        self._fd = -1
        self._owner.in_use -= 1


class StreamSlots:
    """At most `per_user` streams of one user on this host, `per_process` in this process."""

    def __init__(self, directory: Path, per_user: int, per_process: int) -> None:
        self.directory, self.per_user, self.per_process = directory, per_user, per_process
        self.in_use = 0
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)

    def acquire(self, user_id: str) -> StreamSlot:
        """A free slot for `user_id`, or SlotRefused. Runs on the event loop: a few
        non-blocking syscalls on a local file, no waiting."""
        if self.in_use >= self.per_process:
            raise SlotRefused("process", self.per_process)
        # User ids come from tokens' subjects too: hash them into safe file names.
        user = hashlib.sha256(user_id.encode()).hexdigest()[:32]
        for index in range(self.per_user):
            fd = os.open(self.directory / f"{user}.{index}",
                         os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
            try:
                # flock conflicts between open file descriptions, in this process too.
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self.in_use += 1
            return StreamSlot(self, fd)
        raise SlotRefused("user", self.per_user)
