"""Bulk file copies through the OpenSSH client: SFTP carried by `ssh -s ... sftp` processes.

paramiko encrypts and frames every 32 KiB packet in Python (~5 CPU s per GiB here), so
large files go through OpenSSH's `ssh` instead, which does that in C: the gateway speaks
SFTP (adapters.ssh.openssh.sftp_wire) over a socket pair to each `ssh` process. An upload is
striped over several such processes (alternate 255 KiB requests), so the site's
sessions (an sshd that decrypts, an sftp-server that writes) work in parallel on
several cores, and so are downloads. How many: enough channel windows for the link's
bandwidth-delay product, from the round trip measured just before the copy and the rate
copies have shown (adapters.ssh.openssh.stream_plan), at least `streams`.

The sessions ride one standing connection (adapters.ssh.openssh.master: ControlMaster, its socket
in this path's private directory), started by the first copy, so a copy's sessions open
in a few milliseconds instead of a handshake each (0.19 s measured on the testbed: sshd's
re-exec, key exchange and key authentication, for each process). A copy that finds the
master still in its handshake waits for it (at most MASTER_WAIT); sessions that cannot
reach a master (it failed, or at MAX_MUX_SESSIONS) connect on their own as before. The
master ends by itself once unused for a while; `disconnect` ends it at once, dropping
every session on it. So the first large copy to a site account pays one handshake, and
the ones that follow it within the master's idle time none.

Host keys stay pinned: the target's keys are written to a private known_hosts file under
one alias (`HostKeyAlias`), with StrictHostKeyChecking=yes and no other known_hosts, agent,
config file, forwarding or password prompts. Only targets with a key file, no passphrase
and no jump host qualify (`OpenSshBulk.usable`); SshTransport uses paramiko otherwise,
and also when an `ssh` process cannot start a session (it logs why).
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import IO

from adapters.ssh.openssh.master import SshMaster
from adapters.ssh.openssh.sftp_wire import (
    OPEN_CREATE,
    OPEN_READ,
    OPEN_TRUNCATE,
    OPEN_WRITE,
    SftpError,
    SftpSession,
    open_all,
    read_striped,
    reorder_bytes,
    write_striped,
)
from adapters.ssh.openssh.stream_plan import StreamPlan
from adapters.ssh.target import SshTarget
from adapters.transport import (
    CommandTimeout,
    ConnectionFailed,
    FileTransferError,
    LocalSink,
    LocalSource,
    Progress,
    TransportError,
    open_sink,
    open_source,
)

log = logging.getLogger("adapters.ssh")

_ALIAS = "gridgate-pinned-site"
# AES-GCM first: the cheapest cipher for both ssh and the site's sshd (with AES-NI).
_CIPHERS = "^aes128-gcm@openssh.com,aes256-gcm@openssh.com"
# Sessions one master carries at once, below sshd's default MaxSessions (10).
MAX_MUX_SESSIONS = 8
# How long a copy waits for a master in its handshake before connecting on its own.
MASTER_WAIT = 2.0
# Socket pair buffers: 4 MiB (the kernel caps it at net.core.wmem_max/rmem_max) lets the
# gateway run a window ahead of `ssh` instead of switching to it every 200 KiB.
_SOCKET_BUFFER = 4 << 20


# An `ssh` process, our end of its socket pair, and the file catching its stderr.
_Proc = tuple[subprocess.Popen[bytes], socket.socket, IO[bytes]]


class BulkUnavailable(Exception):
    """`ssh` could not start an SFTP session; the caller uses its other path."""


class OpenSshBulk:
    """Uploads and downloads for one target through OpenSSH `ssh` processes."""

    def __init__(self, target: SshTarget, *, streams: int, timeout: float,
                 ssh_binary: str = "ssh") -> None:
        if not self.usable(target, ssh_binary):
            raise ValueError(f"{target.label}: no OpenSSH bulk path for this target")
        self.target, self.streams, self.timeout = target, max(1, streams), timeout
        self.plan = StreamPlan(self.streams, max(self.streams, MAX_MUX_SESSIONS))
        self.last_streams = self.streams  # the last copy's streams (what start_ahead starts)
        self._ssh = shutil.which(ssh_binary) or ssh_binary
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._lock = threading.Lock()
        self._live: set[subprocess.Popen[bytes]] = set()
        # `ssh` processes started ahead of an upload, by the thread that will run it.
        self._ready: dict[int, list[_Proc]] = {}
        # `ssh` processes started for sessions (each a connection of its own unless it
        # rides the master).
        self.connects = 0
        self._master: SshMaster | None = None
        self._muxed: set[subprocess.Popen[bytes]] = set()

    @staticmethod
    def usable(target: SshTarget, ssh_binary: str = "ssh") -> bool:
        """Whether `target` can go through the OpenSSH client at all."""
        return (target.key_path is not None and target.key_passphrase is None
                and target.jump is None and shutil.which(ssh_binary) is not None)

    @property
    def reorder_bytes(self) -> int:
        """See FileTransport.write_reorder_bytes."""
        return reorder_bytes(self.plan.high)  # whatever the cut copy's streams were

    # --- copies ----------------------------------------------------------------------

    def start_ahead(self) -> None:
        """Start the `ssh` processes of this thread's next upload now, so that their
        start overlaps what the thread does before it (site commands); `end_ahead` ends
        the ones no upload took. While the master is in its handshake none are started:
        the upload waits for the master instead (see `_sessions`)."""
        if not self.master.ensure():
            return
        procs = [self._spawn() for _ in range(self.last_streams)]
        with self._lock:
            stale = self._ready.pop(threading.get_ident(), [])
            self._ready[threading.get_ident()] = procs
        self._end(stale, kill=True)

    def end_ahead(self) -> None:
        with self._lock:
            unused = self._ready.pop(threading.get_ident(), [])
        self._end(unused, kill=True)

    def upload(self, source: LocalSource, path: str, *, offset: int, length: int | None,
               mode: int, progress: Progress | None, rtt: float | None = None) -> int:
        """As FileTransport.upload, striped over the streams `plan` gives for `rtt` (the
        round trip measured just before, in seconds)."""
        streams = self._streams_for(rtt)
        with self._sessions(streams) as sessions, self._errors(path, "write"):
            first, *others = sessions
            if offset == 0:
                handle = first.open(path, OPEN_WRITE | OPEN_CREATE | OPEN_TRUNCATE)
                first.set_mode(handle, mode)  # before any data: never readable more widely
            else:
                handle = first.open(path, OPEN_WRITE)
                first.truncate(handle, offset)
            handles = [(first, handle), *zip(others, open_all(others, path, OPEN_WRITE),
                                             strict=True)]
            started = time.monotonic()
            with open_source(source, offset) as src:
                written = write_striped(handles, src, offset, length, progress)
            self.plan.observe(written, time.monotonic() - started, streams, rtt)
            _close_all(handles)
            return written

    def download(self, path: str, sink: LocalSink, *, offset: int, length: int | None,
                 progress: Progress | None, rtt: float | None = None) -> int:
        """As FileTransport.download, striped as `upload` is."""
        streams = self._streams_for(rtt)
        with self._sessions(streams) as sessions, self._errors(path, "read"):
            handles = list(zip(sessions, open_all(sessions, path, OPEN_READ), strict=True))
            size = sessions[0].size(handles[0][1])
            end = size if length is None else min(size, offset + length)
            started = time.monotonic()
            with open_sink(sink, offset) as out:
                done = read_striped(handles, offset, end, out.write, progress)
            self.plan.observe(done, time.monotonic() - started, streams, rtt)
            _close_all(handles)
            return done

    def _streams_for(self, rtt: float | None) -> int:
        streams = self.plan.streams(rtt)
        self.last_streams = streams
        log.debug("%s: %d streams (round trip %s)", self.target.label, streams,
                  "not measured" if rtt is None else f"{rtt * 1000:.1f} ms")
        return streams

    def disconnect(self) -> None:
        """End every `ssh` process now, the master too (copies in flight fail as on a
        dropped link)."""
        with self._lock:
            live, master = list(self._live), self._master
        if master is not None:
            master.stop()
        for proc in live:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()

    def close(self) -> None:
        self.disconnect()
        with self._lock:
            directory, self._dir = self._dir, None
            unused = [p for procs in self._ready.values() for p in procs]
            self._ready.clear()
        self._end(unused, kill=True)
        if directory is not None:
            directory.cleanup()

    # --- sessions --------------------------------------------------------------------

    @contextlib.contextmanager
    def _sessions(self, count: int) -> Iterator[list[SftpSession]]:
        with self._lock:
            ahead = self._ready.pop(threading.get_ident(), [])
        procs, spare = ahead[:count], ahead[count:]
        self._end(spare, kill=True)
        if len(procs) < count and not self.master.ensure():
            self.master.wait_ready(MASTER_WAIT)
        try:
            # Start every process first: their handshakes overlap.
            while len(procs) < count:
                procs.append(self._spawn())
            sessions = []
            for proc, sock, errors in procs:
                try:
                    sessions.append(SftpSession(sock))
                except (OSError, EOFError, SftpError) as exc:
                    raise BulkUnavailable(self._why(proc, errors, exc)) from exc
            yield sessions
        finally:
            self._end(procs, kill=False)

    def _end(self, procs: list[_Proc], *, kill: bool) -> None:
        """Close the processes' sockets (each `ssh` then ends its session and exits; `kill`:
        at once, for unused ones that may still be in their handshake) and reap them in
        the background: the caller's next step (the site's verify command) need not wait
        for a session's teardown."""
        for proc, sock, _errors in procs:
            sock.close()
            if kill:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
        if procs:
            threading.Thread(target=self._reap, args=(procs,), name="gridgate-ssh-reap",
                             daemon=True).start()

    def _reap(self, procs: list[_Proc]) -> None:
        for proc, _sock, errors in procs:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            errors.close()
            with self._lock:
                self._live.discard(proc)
                self._muxed.discard(proc)

    def _spawn(self) -> _Proc:
        ours, theirs = socket.socketpair()
        for sock in (ours, theirs):
            for option in (socket.SO_SNDBUF, socket.SO_RCVBUF):
                sock.setsockopt(socket.SOL_SOCKET, option, _SOCKET_BUFFER)
        errors = tempfile.TemporaryFile()  # noqa: SIM115 (closed in _sessions)
        control = self._control_path()
        with self._lock:
            # sshd allows MaxSessions (10 by default) per connection: past our share of
            # them a session gets a connection of its own.
            mux = len(self._muxed) < MAX_MUX_SESSIONS and os.path.exists(control)
        try:
            fd = theirs.fileno()
            proc = subprocess.Popen(self.argv(control if mux else "none"), stdin=fd,
                                    stdout=fd, stderr=errors, close_fds=True,
                                    start_new_session=True)
        except OSError as exc:
            ours.close()
            errors.close()
            raise BulkUnavailable(f"cannot run {self._ssh}: {exc}") from exc
        finally:
            theirs.close()
        ours.settimeout(self.timeout)
        with self._lock:
            self._live.add(proc)
            if mux:
                self._muxed.add(proc)
            self.connects += 1
        return proc, ours, errors

    @property
    def master(self) -> SshMaster:
        """This target's master connection (made on first use; see adapters.ssh.openssh.master)."""
        with self._lock:
            if self._master is not None:
                return self._master
        control = self._control_path()
        argv = self._options(control, master=True)
        with self._lock:
            if self._master is None:
                self._master = SshMaster(argv, control, self.target.host, self.target.label)
            return self._master

    def argv(self, control_path: str = "none") -> list[str]:
        """The `ssh` command line of a session: an SFTP subsystem over the master's
        connection (`control_path`: its socket), or over a connection of its own."""
        return [*self._options(control_path), "-s", "--", self.target.host, "sftp"]

    def _options(self, control_path: str, *, master: bool = False) -> list[str]:
        """Pinned keys, this key only, nothing else enabled."""
        t = self.target
        assert t.key_path is not None  # usable()
        return [
            self._ssh, "-F", "none", "-x", "-a", "-T", "-e", "none",
            "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={self._known_hosts()}",
            "-o", "GlobalKnownHostsFile=/dev/null", "-o", f"HostKeyAlias={_ALIAS}",
            "-o", "UpdateHostKeys=no", "-o", "CheckHostIP=no",
            "-o", "IdentitiesOnly=yes", "-o", "IdentityAgent=none", "-i", t.key_path,
            "-o", "PasswordAuthentication=no", "-o", "KbdInteractiveAuthentication=no",
            "-o", f"ControlMaster={'yes' if master else 'no'}", "-S", control_path,
            "-o", "ClearAllForwardings=yes", "-o", "LogLevel=ERROR",
            "-o", f"ConnectTimeout={max(1, round(t.connect_timeout))}",
            "-o", f"ServerAliveInterval={max(1, round(t.keepalive_seconds))}",
            "-o", "ServerAliveCountMax=3", "-o", f"Ciphers={_CIPHERS}",
            "-p", str(t.port), "-l", t.user,
        ]

    def _control_path(self) -> str:
        return os.path.join(os.path.dirname(self._known_hosts()), "master")

    def _known_hosts(self) -> str:
        with self._lock:
            if self._dir is None:
                self._dir = tempfile.TemporaryDirectory(prefix="gridgate-ssh-")
                path = os.path.join(self._dir.name, "known_hosts")
                lines = "".join(f"{_ALIAS} {key.line()}\n" for key in self.target.pinned_keys)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "w") as out:
                    out.write(lines)
            return os.path.join(self._dir.name, "known_hosts")

    def _why(self, proc: subprocess.Popen[bytes], errors: IO[bytes],
             exc: BaseException) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        errors.seek(0)
        said = errors.read(2000).decode(errors="replace").strip()
        return (f"ssh to {self.target.label} exited with {proc.returncode}: "
                f"{said or type(exc).__name__}")

    @contextlib.contextmanager
    def _errors(self, path: str, action: str) -> Iterator[None]:
        """Map failures during a copy onto the transport's errors."""
        try:
            yield
        except TransportError:
            raise
        except TimeoutError as exc:
            raise CommandTimeout(f"{action} {path} on {self.target.label}: no progress for "
                                 f"{self.timeout:.0f} s") from exc
        except SftpError as exc:
            if exc.code is not None:  # the server refused: the path, not the link
                raise FileTransferError(f"cannot {action} {path} on {self.target.label}: "
                                        f"{exc}", path=path) from exc
            raise ConnectionFailed(f"SFTP to {self.target.label} broke during {action} "
                                   f"{path}: {exc}") from exc
        except (EOFError, OSError) as exc:
            raise ConnectionFailed(f"connection to {self.target.label} lost during {action} "
                                   f"{path}: {exc or type(exc).__name__}") from exc


def _close_all(handles: list[tuple[SftpSession, bytes]]) -> None:
    """All CLOSEs sent, then their replies: one round trip, not one per session."""
    closing = [(session, session.send_close(handle)) for session, handle in handles]
    for session, req in closing:
        session.wait_ok(req)
