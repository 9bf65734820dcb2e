"""Commands over SSH channels (adapters.ssh.sessions): a deadline, an output cap, and one
round trip each on a channel opened ahead.

A command's exec request, its input and EOF go out together, without waiting for the
server's reply to the exec (as OpenSSH's `ssh host command` does): the reply comes
before the output, and a refused exec closes the channel, which is then reported.

Every step has a deadline. A command that overruns it, or writes more than the output
cap, has its remote process group killed (an SSH "signal" request, which OpenSSH >= 7.9
turns into killpg) and its channel closed.

A command is sent at most once: a pooled connection found dead before a channel opened is
replaced silently (SshConnection.channel), but once the exec request left, a lost
connection is a ConnectionFailed ("it may or may not have run") for the caller to resolve
(e.g. by the job's tag).
"""

from __future__ import annotations

import contextlib
import logging
import select
import threading
from collections.abc import Callable, Sequence
from typing import Any, cast

import paramiko
from paramiko.common import cMSG_CHANNEL_REQUEST

from adapters.errors import CommandTimeout, ConnectionFailed, OutputTooLarge
from adapters.ssh.connection import Deadline, reason
from adapters.ssh.send_guard import send_guard
from adapters.ssh.sessions import Sessions
from adapters.transport.argv import check_argv, remote_command, shown
from adapters.transport.protocol import CommandResult

log = logging.getLogger("adapters.ssh")

_RECV_CHUNK = 1 << 16
_SEND_CHUNK = 1 << 15


def run_command(sessions: Sessions, argv: Sequence[str], stdin: bytes | None,
                timeout: float) -> CommandResult:
    """Run argv in the account's login shell, each element `shlex.quote`d."""
    items = check_argv(argv)
    command = remote_command(items)
    deadline = Deadline(timeout)
    target = sessions.connection.target
    label = target.label
    what = f"`{shown(items)}`"
    log.debug("ssh %s: %s", label, shown(items))
    for attempt in (1, 2):
        with sessions.session(deadline, what) as (chan, conn):
            try:
                _send_exec(chan, conn, command)
            except (paramiko.SSHException, OSError, EOFError) as exc:
                # The request never left: the connection (found dead only now, on a
                # channel opened before) is replaced once, as a dead one found while
                # opening a channel is.
                sessions.connection.drop(conn)
                if attempt == 2 or deadline.expired:
                    raise ConnectionFailed(
                        f"connection to {label} lost before {what} started: {reason(exc)}"
                    ) from exc
                log.info("ssh %s: pooled connection was dead; reconnecting", label)
                continue
            stdout, stderr = _collect(chan, items, stdin, deadline, label,
                                      target.max_output_bytes)
            status = chan.recv_exit_status() if chan.exit_status_ready() else -1
            if status == -1 and not conn.is_active():
                raise ConnectionFailed(
                    f"connection to {label} lost while {what} ran; it may or may not have "
                    "completed"
                )
            if status == -1 and chan.event.is_set() and not chan.event_ready:
                raise ConnectionFailed(f"{label} refused to start {what}; it did not run")
            return CommandResult(items, status, stdout, stderr)
    raise AssertionError("unreachable")


def _send_exec(chan: paramiko.Channel, conn: paramiko.Transport, command: str) -> None:
    """Send the exec request and return at once: the reply (success, or failure, which
    closes the channel) is read with the output. Raises what the send raised: then the
    request did not leave."""
    message = paramiko.Message()
    message.add_byte(cMSG_CHANNEL_REQUEST)
    message.add_int(chan.remote_chanid)
    message.add_string("exec")
    message.add_boolean(True)
    message.add_string(command)
    # paramiko internals (pinned <6 in pyproject.toml), as Channel.exec_command uses them
    # before it waits for the reply.
    cast(Any, chan)._event_pending()
    with send_guard(chan):
        if chan.closed:
            raise EOFError("the channel closed before the command was sent")
        cast(Any, conn)._send_user_message(message)


def start(chan: paramiko.Channel, conn: paramiko.Transport, deadline: Deadline,
          send: Callable[[], None], what: str, label: str) -> None:
    """Send a channel request (exec, subsystem), bounded by the deadline.

    paramiko waits for the reply without a timeout; a watchdog closing the channel at the
    deadline wakes it.
    """
    fired = threading.Event()

    def watchdog() -> None:
        fired.set()
        chan.close()

    timer = threading.Timer(max(0.0, deadline.remaining()), watchdog)
    timer.daemon = True
    timer.start()
    try:
        send()
    except (paramiko.SSHException, OSError, EOFError) as exc:
        if fired.is_set():
            raise CommandTimeout(f"{label}: {what} did not start in time") from exc
        if not conn.is_active():
            raise ConnectionFailed(
                f"connection to {label} lost while starting {what}; it may or may not have "
                "started"
            ) from exc
        raise ConnectionFailed(f"{label} refused to start {what}: {exc}") from exc
    finally:
        timer.cancel()
    if fired.is_set():
        raise CommandTimeout(f"{label}: {what} did not start in time")


def _collect(chan: paramiko.Channel, argv: tuple[str, ...], stdin: bytes | None,
             deadline: Deadline, label: str, cap: int) -> tuple[bytes, bytes]:
    """Feed stdin and read stdout and stderr together until the server closes the channel."""
    out, err = bytearray(), bytearray()
    pending: memoryview | None = memoryview(stdin) if stdin else None
    guard = send_guard(chan)
    chan.settimeout(0.0)
    if pending is None:
        # No input: EOF at once (a command reading stdin must not wait for more).
        pending = memoryview(b"")
    wakeup = chan.fileno()  # readable when either stream has data, or on close
    while True:
        # Everything that may send (window adjusts in recv, data, EOF) under the guard.
        try:
            with guard:
                busy = False
                if chan.recv_ready():
                    out += chan.recv(_RECV_CHUNK)
                    busy = True
                if chan.recv_stderr_ready():
                    err += chan.recv_stderr(_RECV_CHUNK)
                    busy = True
                if pending is not None and (chan.closed or chan.send_ready()):
                    pending = _send_some(chan, pending)
                    busy = True
                # Done once both streams are drained and the channel is closed, or
                # has sent EOF and its exit status (nothing may follow them).
                finished = (not chan.recv_ready() and not chan.recv_stderr_ready()
                            and (chan.closed or (bool(chan.eof_received)
                                                 and chan.exit_status_ready())))
        except (paramiko.SSHException, OSError, EOFError) as exc:
            chan.close()
            raise ConnectionFailed(
                f"connection to {label} lost while `{shown(argv)}` ran; "
                f"it may or may not have completed ({reason(exc)})"
            ) from exc
        if len(out) + len(err) > cap:
            _kill(chan)
            raise OutputTooLarge(
                f"`{shown(argv)}` on {label} wrote more than {cap} bytes of "
                "output; it was stopped",
                limit=cap,
            )
        if finished:
            return bytes(out), bytes(err)
        if busy:
            continue
        remaining = deadline.remaining()
        if remaining <= 0:
            _kill(chan)
            raise CommandTimeout(
                f"`{shown(argv)}` on {label} did not finish within "
                f"{deadline.seconds:g} s; its remote process group was killed"
            )
        if chan.eof_received and pending is None:
            # After EOF the channel's pipe stays readable: wait for the exit status
            # (or the close) itself instead of spinning on select.
            chan.status_event.wait(min(remaining, 1.0))
        else:
            # Poll only while stdin waits for the server's window; else sleep until data.
            select.select([wakeup], [], [], min(remaining, 0.005 if pending else 1.0))


def _send_some(chan: paramiko.Channel, pending: memoryview) -> memoryview | None:
    """Send what the window takes; None once all of stdin is sent and EOF given."""
    if not chan.closed:
        if pending:
            try:
                sent = chan.send(pending[:_SEND_CHUNK].tobytes())
            except (OSError, paramiko.SSHException, EOFError):
                sent = len(pending)  # the command went away without reading its input
            pending = pending[sent:]
            if pending:
                return pending
        with contextlib.suppress(OSError, paramiko.SSHException, EOFError):
            chan.shutdown_write()
    return None


def _kill(chan: paramiko.Channel) -> None:
    """SIGKILL the remote command's process group, then close the channel.

    paramiko has no public call for the "signal" channel request (RFC 4254 6.9); this
    builds it like paramiko's own requests. OpenSSH's sshd answers it with killpg() on the
    session (not for forced commands or subsystems).
    """
    with send_guard(chan):
        if not chan.closed:
            message = paramiko.Message()
            message.add_byte(cMSG_CHANNEL_REQUEST)
            message.add_int(chan.remote_chanid)
            message.add_string("signal")
            message.add_boolean(False)
            message.add_string("KILL")
            # paramiko internal (pinned <6 in pyproject.toml).
            send = getattr(cast(Any, chan.transport), "_send_user_message", None)
            if send is not None:
                with contextlib.suppress(Exception):
                    send(message)
        chan.close()
