"""Session channels to one account: at most `max_sessions` at once, one opened ahead.

sshd refuses more session channels on a connection than its MaxSessions, so a transport
holds at most `max_sessions` of them (the site config's).

Opening a channel costs a round trip before anything can be sent on it: over a wide-area
link, a third of a short command's time (issue 32). So one session channel is kept open
ahead on the pooled connection: a command (or an SFTP session) takes it and sends its
request at once, and the next one is opened ahead while it runs. The one ahead counts as
a session: it holds a slot, and is closed to free it for anyone waiting when none other
is free. Nothing connects in the background: a channel is opened ahead only on a live
connection, after a command used it.

What it changes: a connection found dead while opening a channel was replaced silently,
nothing having been sent on it. A channel opened ahead skips that check: if its
connection died since, and paramiko has not seen it yet, the command's request goes out
into a dead connection and its outcome is unknown (ConnectionFailed, "may or may not
have completed"), as it always was when a connection died after a command was sent;
callers resolve it as they did (a submission by its tag). A send that fails at once
shows the request never left, and is retried on a new connection (adapters.ssh.channels).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Iterator

import paramiko

from adapters.errors import CommandTimeout, TransportError
from adapters.ssh.connection import Deadline, SshConnection, reason
from adapters.ssh.send_guard import send_guard

log = logging.getLogger("adapters.ssh")

# How long a channel opened ahead may take (it is thrown away, never waited for, after).
OPEN_AHEAD_SECONDS = 30.0

Session = tuple[paramiko.Channel, paramiko.Transport]


class Sessions:
    """The session channels of one transport; see the module docstring."""

    def __init__(self, connection: SshConnection, max_sessions: int, *,
                 open_ahead: bool = True) -> None:
        self.connection = connection
        self.max_sessions = max_sessions
        self.open_ahead = open_ahead
        self._changed = threading.Condition()
        self._free = max_sessions
        self._ahead: Session | None = None
        self._opening = False
        self._waiting = 0
        self._closed = False
        # Sessions taken already open (the round trips saved), and opened on demand.
        self.taken_ahead = 0
        self.opened = 0

    @property
    def ready(self) -> bool:
        """Whether a channel opened ahead waits to be taken."""
        with self._changed:
            return self._ahead is not None

    @contextlib.contextmanager
    def session(self, deadline: Deadline, what: str) -> Iterator[Session]:
        """A session channel (the one opened ahead, when it is ready), closed at the end;
        CommandTimeout if no slot frees up before the deadline."""
        ready = self._acquire(deadline, what)
        try:
            if ready is None:
                ready = self.connection.channel(
                    deadline, lambda c, t: c.open_session(timeout=t), what)
                self.opened += 1
            else:
                self.taken_ahead += 1
            self._open_next()
            chan, _ = ready
            try:
                yield ready
            finally:
                chan.close()
        finally:
            with self._changed:
                self._free += 1
                self._changed.notify()

    def close(self) -> None:
        """Close the channel opened ahead, and open no more."""
        with self._changed:
            self._closed = True
            ahead, self._ahead = self._ahead, None
        if ahead is not None:
            _close(ahead[0])

    def _acquire(self, deadline: Deadline, what: str) -> Session | None:
        """A slot: with the channel opened ahead (its slot), or a free one (None)."""
        stale: list[paramiko.Channel] = []
        try:
            with self._changed:
                self._waiting += 1
                try:
                    while True:
                        ahead, self._ahead = self._ahead, None
                        if ahead is not None:
                            if _usable(ahead):
                                return ahead
                            stale.append(ahead[0])  # its slot is ours now
                            return None
                        if self._free > 0:
                            self._free -= 1
                            return None
                        remaining = deadline.remaining()
                        if remaining <= 0:
                            raise CommandTimeout(
                                f"no free SSH session to {self.connection.target.label} for "
                                f"{what} in time ({self.max_sessions} busy)")
                        self._changed.wait(remaining)
                finally:
                    self._waiting -= 1
        finally:
            for chan in stale:
                _close(chan)

    def _open_next(self) -> None:
        """Open the next channel ahead on a thread, if a slot is free that nobody waits for."""
        with self._changed:
            if (not self.open_ahead or self._closed or self._ahead is not None
                    or self._opening or self._free == 0 or self._waiting):
                return
            self._free -= 1
            self._opening = True
        threading.Thread(target=self._open_ahead, daemon=True,
                         name="gridgate-ssh-ahead").start()

    def _open_ahead(self) -> None:
        opened: Session | None = None
        try:
            conn = self.connection.live_transport()
            if conn is not None:
                chan = conn.open_session(timeout=OPEN_AHEAD_SECONDS)
                send_guard(chan)
                opened = (chan, conn)
        except (TransportError, paramiko.SSHException, OSError, EOFError) as exc:
            log.debug("ssh %s: no session opened ahead: %s", self.connection.target.label,
                      reason(exc))
        with self._changed:
            self._opening = False
            keep = opened is not None and not self._closed
            if keep:
                self._ahead = opened
            else:
                self._free += 1
            self._changed.notify()
        if opened is not None and not keep:
            _close(opened[0])


def _usable(session: Session) -> bool:
    chan, conn = session
    return not chan.closed and conn.is_active()


def _close(chan: paramiko.Channel) -> None:
    """Close a channel nobody uses; its connection may be gone already (say, a tunnel whose
    jump host closed first), which changes nothing."""
    with contextlib.suppress(paramiko.SSHException, OSError, EOFError):
        chan.close()
