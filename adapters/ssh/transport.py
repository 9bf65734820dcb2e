"""The SSH transport: the only module of the project that imports paramiko.

One paramiko Transport (one TCP connection, TCP_NODELAY, TCP and SSH keepalives) per
`SshTransport`, opened lazily and reused: each command or file operation is a new channel
on it. The server must show a pinned host key (the site config's; no known_hosts files,
no trust on first use: paramiko's RejectPolicy behaviour) before we authenticate with the
account's key. Every step has a deadline. A command that overruns it, or writes more
than the output cap, has its remote process group killed (an SSH "signal" request, which
OpenSSH >= 7.9 turns into killpg) and its channel closed.

Connection attempts go through the site's CircuitBreaker (backoff with jitter, then fail
fast). Locks are per transport: one site's outage never blocks another site.

A command is sent at most once: a pooled connection found dead before a channel opened is
replaced silently, but once the exec request left, a lost connection is a ConnectionFailed
("it may or may not have run") for the caller to resolve (e.g. by the job's tag).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import posixpath
import select
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import paramiko
from paramiko.common import MSG_CHANNEL_CLOSE, MSG_CHANNEL_FAILURE, cMSG_CHANNEL_REQUEST

from adapters.ssh.breaker import CircuitBreaker
from adapters.ssh.bulk import BulkUnavailable, OpenSshBulk
from adapters.ssh.hostkeys import fingerprint
from adapters.ssh.pool import TransportPool
from adapters.ssh.target import SshTarget
from adapters.transport import (
    AuthenticationFailed,
    CommandResult,
    CommandTimeout,
    ConnectionFailed,
    FileTransferError,
    HostKeyMismatch,
    LocalSink,
    LocalSource,
    OutputTooLarge,
    Progress,
    TransportError,
    check_argv,
    check_read_range,
    copy_stream,
    open_sink,
    open_source,
    remote_command,
    shown,
)

log = logging.getLogger("adapters.ssh")

# Key formats we load, the one we recommend first.
_KEY_CLASSES: tuple[type[paramiko.PKey], ...] = (
    paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey,
)
# Host key algorithms that prove a key of each type (RSA keys sign with SHA-2 today).
_ALGORITHMS = {"ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa")}
_TCP_KEEPALIVE = {"TCP_KEEPIDLE": 30, "TCP_KEEPINTVL": 10, "TCP_KEEPCNT": 3}
_RECV_CHUNK = 1 << 16
_SEND_CHUNK = 1 << 15
# put_bytes/read_bytes have no timeout argument (the protocol's); this bounds them.
FILE_TIMEOUT_SECONDS = 120.0

# Bulk transfer tuning, measured on the testbed (benchmarks/staging_throughput.py).
# paramiko's defaults (2 MiB window, 32 KiB packets and SFTP requests, AES-CTR + HMAC)
# move ~160 MB/s at 5 s CPU/GiB; these reach ~300 MB/s at ~2 s CPU/GiB.
# - AES-GCM first: one AEAD call per packet instead of AES-CTR plus a Python-level HMAC.
_PREFERRED_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")
# - A 16 MiB receive window keeps a download's pipeline full; 256 KiB packets (what we
#   accept; the server still sends us what it likes) cut per-packet Python work 8x.
_WINDOW_BYTES = 16 << 20
_MAX_PACKET_BYTES = 256 << 10
# - SFTP requests of 255 KiB: OpenSSH's sftp-server takes messages up to 256 KiB and
#   reads up to 255 KiB (SFTP_MAX_READ_LENGTH), 8x fewer round trips than 32 KiB.
_SFTP_REQUEST_BYTES = 255 << 10
# - Downloads keep this many reads in flight, in windows of this many bytes (bounded
#   memory even when the sink, e.g. an upload to another site, is slower).
_READS_IN_FLIGHT = 64
_READ_WINDOW_BYTES = 32 << 20
# Uploads hand paramiko this much per write (it splits it into requests, pipelined).
_WRITE_CHUNK_BYTES = 4 << 20
# Copies of at least this many bytes go through OpenSSH (adapters.ssh.bulk) when the
# target allows: starting `ssh` processes costs ~0.1 s, which smaller files don't repay.
BULK_MIN_BYTES = 32 << 20



class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0


class SshTransport:
    """`Transport` over SSH to one account on one login host (see the module docstring).

    `breaker` is the site's circuit breaker (shared by its accounts; a private one if not
    given). `jump` is the transport to `target.jump`, when shared through a pool;
    otherwise one is made (and owned) here.
    """

    def __init__(
        self,
        target: SshTarget,
        *,
        breaker: CircuitBreaker | None = None,
        jump: SshTransport | None = None,
        file_timeout: float = FILE_TIMEOUT_SECONDS,
    ) -> None:
        self.target = target
        self.breaker = breaker or CircuitBreaker(target.label)
        self.file_timeout = file_timeout
        self._owns_jump = jump is None and target.jump is not None
        if jump is None and target.jump is not None:
            jump = SshTransport(target.jump)
        self._jump = jump
        self._conn: paramiko.Transport | None = None
        self._state_lock = threading.Lock()
        # Held while connecting, so concurrent callers share one new connection.
        self._connect_lock = threading.Lock()
        self._sessions = threading.BoundedSemaphore(target.max_sessions)
        self._closed = False
        # SSH connections this transport has opened (pooling shows as 1 for many commands).
        self.connects = 0
        self._bulk = (OpenSshBulk(target, streams=target.bulk_streams, timeout=file_timeout)
                      if target.bulk_streams and OpenSshBulk.usable(target) else None)

    @property
    def bulk(self) -> OpenSshBulk | None:
        """The OpenSSH path for large copies, when this target can use it."""
        return self._bulk

    @property
    def write_reorder_bytes(self) -> int:
        """See FileTransport: striped bulk uploads may leave this much unordered."""
        return self._bulk.reorder_bytes if self._bulk is not None else 0

    def __repr__(self) -> str:
        return f"SshTransport({self.target.label}, {self.target.address})"

    # --- Transport ---------------------------------------------------------------------

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60.0
    ) -> CommandResult:
        """Run argv in the account's login shell, each element `shlex.quote`d."""
        items = check_argv(argv)
        command = remote_command(items)
        deadline = _Deadline(timeout)
        log.debug("ssh %s: %s", self.target.label, shown(items))
        with self._session_slot(deadline, shown(items)):
            chan, conn = self._channel(
                deadline, lambda c, t: c.open_session(timeout=t), f"`{shown(items)}`"
            )
            try:
                self._request(
                    chan, conn, deadline, lambda: chan.exec_command(command),
                    f"`{shown(items)}`",
                )
                stdout, stderr = self._collect(chan, items, stdin, deadline)
                status = chan.recv_exit_status() if chan.exit_status_ready() else -1
                if status == -1 and not conn.is_active():
                    raise ConnectionFailed(
                        f"connection to {self.target.label} lost while `{shown(items)}` ran; "
                        "it may or may not have completed"
                    )
            finally:
                chan.close()
        return CommandResult(items, status, stdout, stderr)

    def put_bytes(self, data: bytes, path: str, *, mode: int = 0o600) -> None:
        """Write through SFTP to a temporary name in the same directory, then rename."""
        directory, name = posixpath.split(path)
        tmp = posixpath.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
        deadline = _Deadline(self.file_timeout)
        with self._sftp(deadline, f"writing {path}") as (sftp, conn):
            try:
                with sftp.open(tmp, "wbx") as out:
                    # Before any data: the content is never readable under a wider mode.
                    out.chmod(mode)
                    out.set_pipelined(True)
                    out.write(data)
                sftp.posix_rename(tmp, path)
            except Exception as exc:
                with contextlib.suppress(Exception):
                    sftp.remove(tmp)
                raise self._file_error(exc, conn, path, "write") from exc

    def read_bytes(
        self, path: str, offset: int = 0, limit: int = 1 << 20
    ) -> tuple[bytes, int | None]:
        """Up to `limit` bytes from `offset` through SFTP; (b"", None) if the file is missing."""
        check_read_range(offset, limit)
        deadline = _Deadline(self.file_timeout)
        with self._sftp(deadline, f"reading {path}") as (sftp, conn):
            try:
                with sftp.open(path, "rb") as src:
                    size = src.stat().st_size or 0
                    if offset >= size or limit == 0:
                        return b"", size
                    src.seek(offset)
                    return src.read(min(limit, size - offset)), size
            except FileNotFoundError:
                return b"", None
            except Exception as exc:
                raise self._file_error(exc, conn, path, "read") from exc

    def upload(
        self, source: LocalSource, path: str, *, offset: int = 0, length: int | None = None,
        mode: int = 0o600, progress: Progress | None = None,
    ) -> int:
        """Stream `source` into `path` over SFTP from `offset` (see FileTransport).

        Writes are pipelined in 255 KiB requests; the server acknowledges them in order,
        so after a dropped connection the file holds a prefix of what was sent. Large
        copies go through OpenSSH when the target allows (module adapters.ssh.bulk).
        """
        check_read_range(offset, length or 0)
        if self._bulk is not None and _large(_bytes_to_send(source, offset, length)):
            with contextlib.suppress(BulkUnavailable):
                return self._bulk_copy(lambda b: b.upload(
                    source, path, offset=offset, length=length, mode=mode, progress=progress))
        deadline = _Deadline(self.file_timeout)
        with self._sftp(deadline, f"writing {path}") as (sftp, conn):
            try:
                with open_source(source, offset) as src:
                    if offset == 0:
                        out = sftp.open(path, "wb")
                        out.chmod(mode)  # before any data: never readable more widely
                    else:
                        out = sftp.open(path, "r+b")
                        out.truncate(offset)
                    with out:
                        setattr(out, "MAX_REQUEST_SIZE", _SFTP_REQUEST_BYTES)  # noqa: B010
                        out.set_pipelined(True)
                        out.seek(offset)
                        return copy_stream(src, out.write, length, progress,
                                           chunk=_WRITE_CHUNK_BYTES)
            except Exception as exc:
                raise self._file_error(exc, conn, path, "write") from exc

    def download(
        self, path: str, sink: LocalSink, *, offset: int = 0, length: int | None = None,
        progress: Progress | None = None,
    ) -> int:
        """Copy `path` from `offset` into `sink` over SFTP, many reads in flight (large
        files through OpenSSH when the target allows)."""
        check_read_range(offset, length or 0)
        if self._bulk is not None and _large(length if length is not None
                                             else self._remote_size(path, offset)):
            with contextlib.suppress(BulkUnavailable):
                return self._bulk_copy(lambda b: b.download(
                    path, sink, offset=offset, length=length, progress=progress))
        deadline = _Deadline(self.file_timeout)
        with self._sftp(deadline, f"reading {path}") as (sftp, conn):
            try:
                with sftp.open(path, "rb") as src, open_sink(sink, offset) as out:
                    setattr(src, "MAX_REQUEST_SIZE", _SFTP_REQUEST_BYTES)  # noqa: B010
                    size = src.stat().st_size or 0
                    end = size if length is None else min(size, offset + length)
                    done, pos = 0, offset
                    while pos < end:
                        stop = min(end, pos + _READ_WINDOW_BYTES)
                        chunks = [(at, min(_SFTP_REQUEST_BYTES, stop - at))
                                  for at in range(pos, stop, _SFTP_REQUEST_BYTES)]
                        for data in src.readv(chunks, _READS_IN_FLIGHT):
                            out.write(data)
                            done += len(data)
                            if progress is not None:
                                progress(done)
                        pos = stop
                    return done
            except Exception as exc:
                raise self._file_error(exc, conn, path, "read") from exc

    def _bulk_copy(self, copy: Callable[[OpenSshBulk], int]) -> int:
        """Run `copy` on the OpenSSH path; if `ssh` cannot start a session, log why and
        raise BulkUnavailable (the caller goes on with paramiko)."""
        assert self._bulk is not None
        if self._closed:
            raise self._closed_error()
        try:
            return copy(self._bulk)
        except BulkUnavailable as exc:
            log.warning("%s: bulk copy through OpenSSH unavailable (%s); using paramiko",
                        self.target.label, exc)
            raise

    def _remote_size(self, path: str, offset: int) -> int | None:
        """Bytes of `path` past `offset` (None if it cannot be read: paramiko says why)."""
        deadline = _Deadline(self.file_timeout)
        with self._sftp(deadline, f"reading {path}") as (sftp, _conn):
            try:
                return max(0, (sftp.stat(path).st_size or 0) - offset)
            except OSError:
                return None

    def close(self) -> None:
        with self._state_lock:
            self._closed = True
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        if self._bulk is not None:
            self._bulk.close()
        if self._owns_jump and self._jump is not None:
            self._jump.close()

    def disconnect(self) -> None:
        """Close the current connection now (calls in flight on it fail as a dropped
        connection would); the next call opens a new one. For fault drills and tests."""
        with self._state_lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()
        if self._bulk is not None:
            self._bulk.disconnect()

    @property
    def connected(self) -> bool:
        conn = self._conn
        return conn is not None and conn.is_active()

    # --- the pooled connection -----------------------------------------------------------

    def _connection(self, deadline: _Deadline) -> paramiko.Transport:
        conn = self._live()
        if conn is not None:
            return conn
        if not self._connect_lock.acquire(timeout=max(0.0, deadline.remaining())):
            raise ConnectionFailed(
                f"timed out waiting for the connection to {self.target.label} to be opened"
            )
        try:
            conn = self._live()
            if conn is not None:
                return conn
            self.breaker.before_attempt()
            try:
                conn = self._connect(deadline)
            except ConnectionFailed as exc:
                wait = self.breaker.record_failure(exc.message)
                log.warning("ssh %s: %s (next attempt in %.1f s)", self.target.label, exc, wait)
                raise
            except BaseException:
                self.breaker.release()
                raise
            self.breaker.record_success()
            with self._state_lock:
                if self._closed:
                    conn.close()
                    raise self._closed_error()
                self._conn = conn
                self.connects += 1
            return conn
        finally:
            self._connect_lock.release()

    def _live(self) -> paramiko.Transport | None:
        with self._state_lock:
            if self._closed:
                raise self._closed_error()
            conn = self._conn
        if conn is not None and conn.is_active():
            return conn
        return None

    def _drop(self, conn: paramiko.Transport) -> None:
        with self._state_lock:
            if self._conn is conn:
                self._conn = None
        conn.close()

    def _closed_error(self) -> TransportError:
        return TransportError(f"the SSH transport to {self.target.label} is closed")

    def _connect(self, deadline: _Deadline) -> paramiko.Transport:
        """A new authenticated connection, or an error; never authenticates to a wrong key."""
        target = self.target
        pkey = self._load_key()  # before any I/O: a bad key says nothing about the site
        timeout = min(target.connect_timeout, deadline.remaining())
        if timeout <= 0:
            raise ConnectionFailed(f"no time left to connect to {target.label}")
        via = f" via {self._jump.target.label}" if self._jump is not None else ""
        started = time.monotonic()
        sock: socket.socket | paramiko.Channel = (
            self._tunnel(deadline) if self._jump is not None else self._socket(timeout)
        )
        conn = paramiko.Transport(sock, default_window_size=_WINDOW_BYTES,
                                  default_max_packet_size=_MAX_PACKET_BYTES)
        _order_sends_before_close(conn)
        try:
            conn.banner_timeout = conn.handshake_timeout = conn.auth_timeout = timeout
            self._prefer_pinned_algorithms(conn)
            _prefer_fast_ciphers(conn)
            conn.start_client(timeout=timeout)
            self._check_host_key(conn.get_remote_server_key())
            more = conn.auth_publickey(target.user, pkey)
            if more:
                raise AuthenticationFailed(
                    f"{target.label} ({target.address}) wants more than a key to log in "
                    f"({', '.join(more)})"
                )
            conn.set_keepalive(max(1, int(target.keepalive_seconds)))
        except TransportError:
            conn.close()
            raise
        except paramiko.AuthenticationException as exc:
            conn.close()
            raise AuthenticationFailed(
                f"{target.label} ({target.address}) refused the key {self._key_source()}: {exc}"
            ) from exc
        except (paramiko.SSHException, OSError, EOFError) as exc:
            conn.close()
            raise ConnectionFailed(
                f"cannot connect to {target.label} ({target.host}:{target.port}{via}): "
                f"{_reason(exc)}"
            ) from exc
        log.info("ssh %s: connected to %s%s in %.0f ms", target.label, target.address, via,
                 (time.monotonic() - started) * 1000)
        return conn

    def _socket(self, timeout: float) -> socket.socket:
        target = self.target
        try:
            sock = socket.create_connection((target.host, target.port), timeout=timeout)
        except OSError as exc:
            raise ConnectionFailed(
                f"cannot connect to {target.label} ({target.host}:{target.port}): {_reason(exc)}"
            ) from exc
        # Without TCP_NODELAY each small command waits on Nagle + delayed ACKs (~40 ms).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in _TCP_KEEPALIVE.items():
            if hasattr(socket, name):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
        return sock

    def _tunnel(self, deadline: _Deadline) -> paramiko.Channel:
        """A direct-tcpip channel from the jump host to our target (ProxyJump)."""
        assert self._jump is not None
        jump, target = self._jump, self.target
        dest = (target.host, target.port)
        try:
            chan, _ = jump._channel(
                deadline,
                lambda c, t: c.open_channel("direct-tcpip", dest, ("127.0.0.1", 0), timeout=t),
                f"a tunnel to {target.host}:{target.port}",
            )
        except (ConnectionFailed, CommandTimeout) as exc:
            raise ConnectionFailed(
                f"cannot reach {target.label} ({target.host}:{target.port}) through jump host "
                f"{jump.target.label}: {exc.message}"
            ) from exc
        return chan

    def _prefer_pinned_algorithms(self, conn: paramiko.Transport) -> None:
        """Ask for the pinned key types first, so a server with several keys shows a pinned
        one. Other types stay allowed only to say what the server has when nothing matches."""
        options = conn.get_security_options()
        available = list(options.key_types)
        wanted: list[str] = []
        for pin in self.target.pinned_keys:
            for name in _ALGORITHMS.get(pin.key_type, (pin.key_type,)):
                if name in available and name not in wanted:
                    wanted.append(name)
        options.key_types = wanted + [name for name in available if name not in wanted]

    def _check_host_key(self, offered: paramiko.PKey) -> None:
        """RejectPolicy: only a byte-identical pinned key is accepted."""
        target = self.target
        blob = offered.asbytes()
        pins = target.pinned_keys
        if any(pin.blob == blob for pin in pins):
            return
        shown_offer = f"{offered.get_name()} {fingerprint(blob)}"
        expected = tuple(pin.describe() for pin in pins)
        log.error("ssh %s: host key mismatch: offered %s, pinned %s", target.label,
                  shown_offer, ", ".join(expected))
        raise HostKeyMismatch(
            f"host key of {target.label} ({target.host}:{target.port}) is not the pinned one: "
            f"the server offered {shown_offer}; the site config pins {' or '.join(expected)}. "
            "Refused before authenticating. If the site's key really changed, update its "
            "host_keys in the site config.",
            host=target.host,
            port=target.port,
            offered=shown_offer,
            expected=expected,
        )

    def _key_source(self) -> str:
        return self.target.key_path or "(given as data)"

    def _load_key(self) -> paramiko.PKey:
        """The account's private key. Neither it nor any parser message is ever shown."""
        target = self.target
        if target.key_data is not None:
            data = target.key_data
        else:
            assert target.key_path is not None
            try:
                data = Path(target.key_path).read_bytes()
            except OSError as exc:
                raise AuthenticationFailed(
                    f"cannot read the SSH private key of {target.label} from {target.key_path}: "
                    f"{exc.strerror}"
                ) from None
        text = data.decode("utf-8", errors="replace")
        for key_class in _KEY_CLASSES:
            try:
                return key_class.from_private_key(io.StringIO(text), password=target.key_passphrase)
            except paramiko.PasswordRequiredException:
                raise AuthenticationFailed(
                    f"the SSH private key of {target.label} {self._key_source()} is encrypted "
                    "and no passphrase was given"
                ) from None
            except (paramiko.SSHException, ValueError, TypeError):
                continue
        raise AuthenticationFailed(
            f"the SSH private key of {target.label} {self._key_source()} is not an ed25519, "
            "ECDSA or RSA private key (or its passphrase is wrong)"
        )

    # --- channels ----------------------------------------------------------------------

    @contextlib.contextmanager
    def _session_slot(self, deadline: _Deadline, what: str) -> Iterator[None]:
        """At most `max_sessions` channels at once (sshd refuses more than MaxSessions)."""
        if not self._sessions.acquire(timeout=max(0.0, deadline.remaining())):
            raise CommandTimeout(
                f"no free SSH session to {self.target.label} for {what} in time "
                f"({self.target.max_sessions} busy)"
            )
        try:
            yield
        finally:
            self._sessions.release()

    def _channel(
        self,
        deadline: _Deadline,
        opener: Callable[[paramiko.Transport, float], paramiko.Channel],
        what: str,
    ) -> tuple[paramiko.Channel, paramiko.Transport]:
        """A new channel on the pooled connection; a dead connection is replaced once."""
        for attempt in (1, 2):
            conn = self._connection(deadline)
            try:
                chan = opener(conn, max(0.001, deadline.remaining()))
                _send_guard(chan)
                return chan, conn
            except (paramiko.SSHException, OSError, EOFError) as exc:
                if conn.is_active():
                    if isinstance(exc, paramiko.ChannelException):
                        raise ConnectionFailed(
                            f"{self.target.label} refused a channel for {what}: {_reason(exc)}"
                        ) from exc
                    raise CommandTimeout(
                        f"{self.target.label}: opening a channel for {what} timed out"
                    ) from exc
                self._drop(conn)
                if attempt == 2 or deadline.expired:
                    raise ConnectionFailed(
                        f"connection to {self.target.label} lost before {what} started: "
                        f"{_reason(exc)}"
                    ) from exc
                log.info("ssh %s: pooled connection was dead; reconnecting", self.target.label)
        raise AssertionError("unreachable")

    def _request(
        self,
        chan: paramiko.Channel,
        conn: paramiko.Transport,
        deadline: _Deadline,
        send: Callable[[], None],
        what: str,
    ) -> None:
        """Send a channel request (exec, subsystem), bounded by the deadline.

        paramiko waits for the reply without a timeout; a watchdog closing the channel
        at the deadline wakes it.
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
                raise CommandTimeout(f"{self.target.label}: {what} did not start in time") from exc
            if not conn.is_active():
                raise ConnectionFailed(
                    f"connection to {self.target.label} lost while starting {what}; it may or "
                    "may not have started"
                ) from exc
            raise ConnectionFailed(f"{self.target.label} refused to start {what}: {exc}") from exc
        finally:
            timer.cancel()
        if fired.is_set():
            raise CommandTimeout(f"{self.target.label}: {what} did not start in time")

    def _collect(
        self,
        chan: paramiko.Channel,
        argv: tuple[str, ...],
        stdin: bytes | None,
        deadline: _Deadline,
    ) -> tuple[bytes, bytes]:
        """Feed stdin and read stdout and stderr together until the server closes the channel."""
        out, err = bytearray(), bytearray()
        pending: memoryview | None = memoryview(stdin) if stdin else None
        guard = _send_guard(chan)
        chan.settimeout(0.0)
        if pending is None:
            # No input: EOF at once (a command reading stdin must not wait for more).
            pending = memoryview(b"")
        wakeup = chan.fileno()  # readable when either stream has data, or on close
        cap = self.target.max_output_bytes
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
                        pending = self._send_some(chan, pending)
                        busy = True
                    # Done once both streams are drained and the channel is closed, or
                    # has sent EOF and its exit status (nothing may follow them).
                    finished = (not chan.recv_ready() and not chan.recv_stderr_ready()
                                and (chan.closed or (bool(chan.eof_received)
                                                     and chan.exit_status_ready())))
            except (paramiko.SSHException, OSError, EOFError) as exc:
                chan.close()
                raise ConnectionFailed(
                    f"connection to {self.target.label} lost while `{shown(argv)}` ran; "
                    f"it may or may not have completed ({_reason(exc)})"
                ) from exc
            if len(out) + len(err) > cap:
                self._kill(chan)
                raise OutputTooLarge(
                    f"`{shown(argv)}` on {self.target.label} wrote more than {cap} bytes of "
                    "output; it was stopped",
                    limit=cap,
                )
            if finished:
                return bytes(out), bytes(err)
            if busy:
                continue
            remaining = deadline.remaining()
            if remaining <= 0:
                self._kill(chan)
                raise CommandTimeout(
                    f"`{shown(argv)}` on {self.target.label} did not finish within "
                    f"{deadline.seconds:g} s; its remote process group was killed"
                )
            if chan.eof_received and pending is None:
                # After EOF the channel's pipe stays readable: wait for the exit status
                # (or the close) itself instead of spinning on select.
                chan.status_event.wait(min(remaining, 1.0))
            else:
                # Poll only while stdin waits for the server's window; else sleep until data.
                select.select([wakeup], [], [], min(remaining, 0.005 if pending else 1.0))

    @staticmethod
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

    def _kill(self, chan: paramiko.Channel) -> None:
        """SIGKILL the remote command's process group, then close the channel.

        paramiko has no public call for the "signal" channel request (RFC 4254 6.9); this
        builds it like paramiko's own requests. OpenSSH's sshd answers it with killpg()
        on the session (not for forced commands or subsystems).
        """
        with _send_guard(chan):
            self._signal_and_close(chan)

    @staticmethod
    def _signal_and_close(chan: paramiko.Channel) -> None:
        if not chan.closed:
            message = paramiko.Message()
            message.add_byte(cMSG_CHANNEL_REQUEST)
            message.add_int(chan.remote_chanid)
            message.add_string("signal")
            message.add_boolean(False)
            message.add_string("KILL")
            send = getattr(cast(Any, chan.transport), "_send_user_message", None)
            if send is not None:
                with contextlib.suppress(Exception):
                    send(message)
        chan.close()

    # --- SFTP ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _sftp(
        self, deadline: _Deadline, what: str
    ) -> Iterator[tuple[paramiko.SFTPClient, paramiko.Transport]]:
        with self._session_slot(deadline, what):
            chan, conn = self._channel(deadline, lambda c, t: c.open_session(timeout=t), what)
            try:
                self._request(chan, conn, deadline, lambda: chan.invoke_subsystem("sftp"), what)
                chan.settimeout(max(0.001, deadline.remaining()))
                try:
                    sftp = paramiko.SFTPClient(chan)
                except Exception as exc:
                    raise self._file_error(exc, conn, what, "start SFTP for") from exc
                yield sftp, conn
            finally:
                chan.close()

    def _file_error(
        self, exc: BaseException, conn: paramiko.Transport, path: str, action: str
    ) -> TransportError:
        if isinstance(exc, TransportError):
            return exc
        if isinstance(exc, TimeoutError):
            return CommandTimeout(f"{action} {path} on {self.target.label} timed out")
        if not conn.is_active() or isinstance(exc, EOFError | paramiko.SSHException):
            return ConnectionFailed(
                f"connection to {self.target.label} lost during {action} {path}: {_reason(exc)}"
            )
        return FileTransferError(
            f"cannot {action} {path} on {self.target.label}: {_reason(exc)}", path=path
        )


# --- paramiko#1115 workaround ------------------------------------------------------------
# paramiko builds a channel message under the channel's lock but writes it after releasing
# the lock, while its transport thread answers the server's CHANNEL_CLOSE with our own
# CLOSE. A data, EOF or window-adjust packet can so follow our CLOSE, and OpenSSH then drops
# the whole connection ("ieof packet referred to nonexistent channel"), failing every
# command in flight on it (seen here with 12 threads sharing one connection). Each channel
# we open gets a guard lock: our thread holds it while it may send on the channel, and the
# transport thread's CLOSE (and request-failure) handling takes it too, so our packets
# always go out before our CLOSE. Tunnels to a jump host carry another paramiko transport's
# writes and are not covered.

_GUARD_ATTRIBUTE = "_gridgate_send_guard"
_ChannelHandler = Callable[[paramiko.Channel, paramiko.Message], None]


def _send_guard(chan: paramiko.Channel) -> threading.Lock:
    guard: threading.Lock | None = getattr(chan, _GUARD_ATTRIBUTE, None)
    if guard is None:
        guard = threading.Lock()
        setattr(chan, _GUARD_ATTRIBUTE, guard)
    return guard


def _guarded(handler: _ChannelHandler) -> _ChannelHandler:
    def handle(chan: paramiko.Channel, message: paramiko.Message) -> None:
        guard: threading.Lock | None = getattr(chan, _GUARD_ATTRIBUTE, None)
        if guard is None:
            handler(chan, message)
            return
        with guard:
            handler(chan, message)

    return handle


def _order_sends_before_close(conn: paramiko.Transport) -> None:
    """Route this connection's CLOSE/FAILURE handling through the channels' guards."""
    table = dict(cast(Any, paramiko.Transport)._channel_handler_table)
    for ptype in (MSG_CHANNEL_CLOSE, MSG_CHANNEL_FAILURE):
        table[ptype] = _guarded(table[ptype])
    cast(Any, conn)._channel_handler_table = table


def _prefer_fast_ciphers(conn: paramiko.Transport) -> None:
    """AES-GCM first (fastest in paramiko, see _PREFERRED_CIPHERS); the rest stay allowed."""
    options = conn.get_security_options()
    available = list(options.ciphers)
    first = [name for name in _PREFERRED_CIPHERS if name in available]
    options.ciphers = first + [name for name in available if name not in first]


class SshTransportPool(TransportPool[SshTransport]):
    """`pool.get(target)` -> the shared SshTransport for (host, port, user)."""

    def __init__(self) -> None:
        super().__init__(lambda target, breaker, jump: SshTransport(
            target, breaker=breaker, jump=jump))


def _bytes_to_send(source: LocalSource, offset: int, length: int | None) -> int | None:
    """How much an upload will move, when that can be known beforehand."""
    if length is not None:
        return length
    if isinstance(source, str | os.PathLike):
        with contextlib.suppress(OSError):
            return max(0, os.path.getsize(source) - offset)
    return None


def _large(size: int | None) -> bool:
    """Worth the OpenSSH path (an unknown size is assumed large: streamed copies)."""
    return size is None or size >= BULK_MIN_BYTES


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
