"""Session channels to one account: at most `max_sessions` at once, some opened ahead.

sshd refuses more session channels on a connection than its MaxSessions, so a transport
holds at most `max_sessions` of them (the target's: 8 by default, below OpenSSH's 10).

Opening a channel costs a round trip before anything can be sent on it: over a wide-area
link, half of a short command's time (issue 32). So a few session channels (`ahead`, 2
by default) are kept open ahead on the pooled connection: a command (or an SFTP session)
takes one and sends its request at once, and another is opened ahead while it runs. Two,
so that a site's status calls, one after the other, do not leave none ready for a
submission that comes meanwhile. Each one ahead counts as a session: it holds a slot,
which comes with it to whoever takes it, so they never take slots from commands.
Nothing connects in the background: channels are opened ahead only on a live
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

from adapters.errors import CommandTimeout, ConnectionFailed, TransportError
from adapters.ssh.connection import Deadline, SshConnection, reason
from adapters.ssh.send_guard import send_guard
from adapters.ssh.site_connections import SiteConnections

log = logging.getLogger("adapters.ssh")

# How long a channel opened ahead may take (it is thrown away, never waited for, after).
OPEN_AHEAD_SECONDS = 30.0

Session = tuple[paramiko.Channel, paramiko.Transport]


class Sessions:
    """The session channels of one transport; see the module docstring."""

    def __init__(self, connection: SshConnection, max_sessions: int, *,
                 ahead: int = 2, site: SiteConnections | None = None) -> None:
        self.connection = connection
        # The site's other accounts' connections, closed when idle past its cap.
        self.site = site
        self.max_sessions = max_sessions
        self.ahead = ahead
        self._changed = threading.Condition()
        self._free = max_sessions
        self._ahead: list[Session] = []
        self._opening = 0
        self._waiting = 0
        self._closed = False
        # Sessions taken already open (the round trips saved), and opened on demand.
        self.taken_ahead = 0
        self.opened = 0

    @property
    def ready(self) -> int:
        """How many channels opened ahead wait to be taken."""
        with self._changed:
            return len(self._ahead)

    @contextlib.contextmanager
    def session(self, deadline: Deadline, what: str) -> Iterator[Session]:
        """A session channel (one opened ahead, when one is ready), closed at the end;
        CommandTimeout if no slot frees up before the deadline."""
        if self.site is not None:
            self.site.used(self)
        ready = self._acquire(deadline, what)
        try:
            opened = ready is None
            if ready is None:
                ready = self._open(deadline, what)
            with self._changed:
                if opened:
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
            # Again at the end: an open ahead refused meanwhile (sshd frees a closed
            # session a moment after our close) is tried once more now.
            self._open_next()

    def _open(self, deadline: Deadline, what: str) -> Session:
        """A new session channel; once more if sshd refused it. sshd frees a closed
        session only at the end of its loop's turn, so an open that arrives with the close
        of another (ours, a moment before: its slot free here) can find it still counted
        against MaxSessions; by the time the refusal is back, it is freed."""
        try:
            return self.connection.channel(deadline, _open_session, what)
        except ConnectionFailed as exc:
            if not isinstance(exc.__cause__, paramiko.ChannelException):
                raise
            log.info("ssh %s: sshd refused a session for %s; once more",
                     self.connection.target.label, what)
            return self.connection.channel(deadline, _open_session, what)

    def close_if_idle(self) -> bool:
        """Close the connection if no command or transfer uses it (channels opened ahead
        are closed with it); whether none is open now (adapters.ssh.site_connections)."""
        with self._changed:
            if self._closed:
                return True
            if self._free + len(self._ahead) < self.max_sessions or self._opening:
                return False
            ahead, self._ahead = self._ahead, []
            self._free += len(ahead)
            # Under the lock: no command takes a slot before the connection is out.
            conn = self.connection.detach()
        for chan, _ in ahead:
            _close(chan)
        if conn is not None:
            conn.close()
        return True

    def close(self) -> None:
        """Close the channel opened ahead, and open no more."""
        with self._changed:
            self._closed = True
            ahead, self._ahead = self._ahead, []
        for chan, _ in ahead:
            _close(chan)

    def _acquire(self, deadline: Deadline, what: str) -> Session | None:
        """A slot: with the channel opened ahead (its slot), or a free one (None)."""
        stale: list[paramiko.Channel] = []
        try:
            with self._changed:
                self._waiting += 1
                try:
                    while True:
                        if self._ahead:
                            # Those on a connection that died or was retired for renewal
                            # are closed, their slots free again (one of them ours).
                            fresh = [a for a in self._ahead
                                     if _usable(a) and self.connection.current(a[1])]
                            stale = [chan for chan, conn in self._ahead
                                     if not any(chan is f[0] for f in fresh)]
                            self._ahead = fresh
                            if len(stale) > 1 or (stale and fresh):
                                self._changed.notify_all()  # slots for others
                            if fresh:
                                self._free += len(stale)
                                return self._ahead.pop()  # the newest
                            self._free += len(stale) - 1
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
        """Open channels ahead on threads, up to `ahead`, with slots nobody waits for."""
        with self._changed:
            count = 0
            while (not self._closed and len(self._ahead) + self._opening + count < self.ahead
                   and self._free > 0 and not self._waiting):
                self._free -= 1
                count += 1
            self._opening += count
        for _ in range(count):
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
            self._opening -= 1
            keep = opened is not None and not self._closed
            if keep:
                assert opened is not None
                self._ahead.append(opened)
            else:
                self._free += 1
            self._changed.notify()
        if opened is not None and not keep:
            _close(opened[0])


def _open_session(conn: paramiko.Transport, timeout: float) -> paramiko.Channel:
    return conn.open_session(timeout=timeout)


def _usable(session: Session) -> bool:
    chan, conn = session
    return not chan.closed and conn.is_active()


def _close(chan: paramiko.Channel) -> None:
    """Close a channel nobody uses; its connection may be gone already (say, a tunnel whose
    jump host closed first), which changes nothing."""
    with contextlib.suppress(paramiko.SSHException, OSError, EOFError):
        chan.close()
