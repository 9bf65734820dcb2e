"""One pooled, authenticated SSH connection to one account: connect, verify, keep alive.

One paramiko Transport (one TCP connection, TCP_NODELAY, TCP and SSH keepalives), opened
lazily and reused: each command or file operation is a new channel on it. The server must
show a pinned host key (the site config's; no known_hosts files, no trust on first use:
paramiko's RejectPolicy behaviour) before we authenticate with the account's key. A target
behind a jump host is reached through a direct-tcpip channel on the jump host's connection.

Connection attempts go through the site's CircuitBreaker (backoff with jitter, then fail
fast). Locks are per connection: one site's outage never blocks another site.

A target that logs in with short-lived certificates (`SshTarget.credentials`) gets a new
certificate for each connection, and its connection is retired `renew_before` its
certificate expires: new commands go to a new connection (a new certificate, so whoever
signs it decides again whether the researcher may still log in), while the commands
and transfers on the old one finish there; it closes once it carries none.
"""

from __future__ import annotations

import io
import logging
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import paramiko
from paramiko.common import cMSG_GLOBAL_REQUEST

from adapters.errors import (
    AuthenticationFailed,
    CommandTimeout,
    ConnectionFailed,
    HostKeyMismatch,
    TransportError,
)
from adapters.ssh.breaker import CircuitBreaker
from adapters.ssh.hostkeys import fingerprint
from adapters.ssh.send_guard import order_sends_before_close, send_guard
from adapters.ssh.target import SshTarget

log = logging.getLogger("adapters.ssh")

# Key formats we load, the one we recommend first.
_KEY_CLASSES: tuple[type[paramiko.PKey], ...] = (
    paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey,
)
# Host key algorithms that prove a key of each type (RSA keys sign with SHA-2 today).
_ALGORITHMS = {"ssh-rsa": ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa")}
_TCP_KEEPALIVE = {"TCP_KEEPIDLE": 30, "TCP_KEEPINTVL": 10, "TCP_KEEPCNT": 3}

# Bulk transfer tuning, measured on the testbed (benchmarks/staging_throughput.py).
# paramiko's defaults (2 MiB window, 32 KiB packets and SFTP requests, AES-CTR + HMAC)
# move ~160 MB/s at 5 s CPU/GiB; these reach ~300 MB/s at ~2 s CPU/GiB (with the SFTP
# request sizes of adapters.ssh.sftp).
# - AES-GCM first: one AEAD call per packet instead of AES-CTR plus a Python-level HMAC.
_PREFERRED_CIPHERS = ("aes128-gcm@openssh.com", "aes256-gcm@openssh.com")
# - A 16 MiB receive window keeps a download's pipeline full; 256 KiB packets (what we
#   accept; the server still sends us what it likes) cut per-packet Python work 8x.
_WINDOW_BYTES = 16 << 20
_MAX_PACKET_BYTES = 256 << 10

# Opens a channel on a connection within the given seconds.
ChannelOpener = Callable[[paramiko.Transport, float], paramiko.Channel]


class Deadline:
    """When a step must be over (monotonic clock)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()

    @property
    def expired(self) -> bool:
        return self.remaining() <= 0


class SshConnection:
    """The connection to `target`, (re)opened on demand; see the module docstring.

    `jump` is the connection to `target.jump`, when shared through a pool; otherwise one
    is made (and owned) here, with a breaker of its own.
    """

    def __init__(self, target: SshTarget, breaker: CircuitBreaker,
                 jump: SshConnection | None = None) -> None:
        self.target = target
        self.breaker = breaker
        self._owns_jump = jump is None and target.jump is not None
        if jump is None and target.jump is not None:
            jump = SshConnection(target.jump, CircuitBreaker(target.jump.label))
        self.jump = jump
        self._conn: paramiko.Transport | None = None
        # Monotonic time from which the connection takes no new commands (its certificate
        # is about to expire); None: a key's connection, kept while it lives.
        self._renew_at: float | None = None
        # Connections retired for renewal, closed once they carry no channel.
        self._retired: list[paramiko.Transport] = []
        self._state_lock = threading.Lock()
        # Held while connecting, so concurrent callers share one new connection.
        self._connect_lock = threading.Lock()
        self._ping_lock = threading.Lock()  # one round_trip at a time (one reply event)
        self._closed = False
        # SSH connections opened so far (pooling shows as 1 for many commands).
        self.connects = 0

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def connected(self) -> bool:
        conn = self._conn
        return conn is not None and conn.is_active()

    def channel(self, deadline: Deadline, opener: ChannelOpener,
                what: str) -> tuple[paramiko.Channel, paramiko.Transport]:
        """A new channel on the pooled connection; a dead connection is replaced once."""
        for attempt in (1, 2):
            conn = self._connection(deadline)
            try:
                chan = opener(conn, max(0.001, deadline.remaining()))
                send_guard(chan)
                return chan, conn
            except (paramiko.SSHException, OSError, EOFError) as exc:
                # A failed send (EOFError, OSError) means the socket is gone even while
                # paramiko's reader thread has yet to notice (is_active() still true): the
                # connection is dead, not slow. Only an SSHException on a live connection
                # is the server's answer (refused) or its silence (timed out).
                broken = isinstance(exc, (EOFError, OSError))
                if conn.is_active() and not broken:
                    if isinstance(exc, paramiko.ChannelException):
                        raise ConnectionFailed(
                            f"{self.target.label} refused a channel for {what}: {reason(exc)}"
                        ) from exc
                    raise CommandTimeout(
                        f"{self.target.label}: opening a channel for {what} timed out"
                    ) from exc
                self.drop(conn)
                if attempt == 2 or deadline.expired:
                    raise ConnectionFailed(
                        f"connection to {self.target.label} lost before {what} started: "
                        f"{reason(exc)}"
                    ) from exc
                log.info("ssh %s: pooled connection was dead; reconnecting", self.target.label)
        raise AssertionError("unreachable")

    def round_trip(self, timeout: float) -> float | None:
        """Seconds one round trip on the pooled connection (connected first if need be)
        takes now: a global request the server must answer, as OpenSSH's keepalives
        are, so nothing runs on the site. None when no answer came within `timeout`."""
        deadline = Deadline(timeout)
        try:
            conn = self._connection(deadline)
        except TransportError:
            return None
        message = paramiko.Message()
        message.add_byte(cMSG_GLOBAL_REQUEST)
        message.add_string("keepalive@openssh.com")
        message.add_boolean(True)  # want a reply (paramiko's global_request(wait=False)
        # asks for none, and its wait=True has no timeout)
        with self._ping_lock:
            answered = threading.Event()
            # paramiko internals (pinned <6 in pyproject.toml): the reply sets this event.
            raw = cast(Any, conn)
            raw.completion_event = answered
            started = time.monotonic()
            try:
                raw._send_user_message(message)
            except (paramiko.SSHException, OSError, EOFError):
                return None
            if not answered.wait(max(0.0, deadline.remaining())):
                return None
            return time.monotonic() - started

    def live_transport(self) -> paramiko.Transport | None:
        """The pooled connection when it is open and alive, else None (never connects)."""
        return self._live()

    def current(self, conn: paramiko.Transport) -> bool:
        """Whether `conn` is the pooled connection and not yet due for renewal."""
        with self._state_lock:
            due = self._renew_at is not None and time.monotonic() >= self._renew_at
            return conn is self._conn and not due

    @property
    def retired(self) -> int:
        """Connections retired for renewal and still carrying a command or transfer."""
        self._reap()
        with self._state_lock:
            return len(self._retired)

    def close(self) -> None:
        """Close for good: later calls raise TransportError."""
        with self._state_lock:
            self._closed = True
            conn, self._conn = self._conn, None
            retired, self._retired = self._retired, []
        for old in retired:
            old.close()
        if conn is not None:
            conn.close()
        if self._owns_jump and self.jump is not None:
            self.jump.close()

    def disconnect(self) -> None:
        """Close the current connection; the next call opens a new one."""
        conn = self.detach()
        if conn is not None:
            conn.close()

    def detach(self) -> paramiko.Transport | None:
        """Take the current connection out (the caller closes it); the next call opens
        a new one."""
        with self._state_lock:
            conn, self._conn = self._conn, None
        return conn

    def closed_error(self) -> TransportError:
        return TransportError(f"the SSH transport to {self.target.label} is closed")

    # --- the pooled connection -----------------------------------------------------------

    def _connection(self, deadline: Deadline) -> paramiko.Transport:
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
                conn, renew_at = self._connect(deadline)
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
                    raise self.closed_error()
                self._conn, self._renew_at = conn, renew_at
                self.connects += 1
            return conn
        finally:
            self._connect_lock.release()

    def _live(self) -> paramiko.Transport | None:
        with self._state_lock:
            if self._closed:
                raise self.closed_error()
            conn = self._conn
            if (conn is not None and self._renew_at is not None
                    and time.monotonic() >= self._renew_at):
                self._retired.append(conn)
                self._conn = conn = None
                log.info("ssh %s: certificate due for renewal; new commands go to a new "
                         "connection", self.target.label)
        if self._retired:
            self._reap()
        if conn is not None and conn.is_active():
            return conn
        return None

    def _reap(self) -> None:
        """Close the retired connections that carry nothing any more."""
        with self._state_lock:
            idle = [c for c in self._retired if not _carries_channels(c)]
            self._retired = [c for c in self._retired if c not in idle]
        for conn in idle:
            conn.close()

    def drop(self, conn: paramiko.Transport) -> None:
        """Close `conn`, found dead; the next call opens a new connection."""
        with self._state_lock:
            if self._conn is conn:
                self._conn = None
        conn.close()

    def _connect(self, deadline: Deadline) -> tuple[paramiko.Transport, float | None]:
        """A new authenticated connection and when it is due for renewal, or an error;
        never authenticates to a wrong key."""
        target = self.target
        # Before any I/O: a bad key says nothing about the site.
        pkey, renew_at = self._certified_key() if target.credentials else (self._load_key(),
                                                                            None)
        timeout = min(target.connect_timeout, deadline.remaining())
        if timeout <= 0:
            raise ConnectionFailed(f"no time left to connect to {target.label}")
        via = f" via {self.jump.target.label}" if self.jump is not None else ""
        started = time.monotonic()
        sock: socket.socket | paramiko.Channel = (
            self._tunnel(deadline) if self.jump is not None else self._socket(timeout)
        )
        conn = paramiko.Transport(sock, default_window_size=_WINDOW_BYTES,
                                  default_max_packet_size=_MAX_PACKET_BYTES)
        order_sends_before_close(conn)
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
                f"{reason(exc)}"
            ) from exc
        log.info("ssh %s: connected to %s%s in %.0f ms", target.label, target.address, via,
                 (time.monotonic() - started) * 1000)
        return conn, renew_at

    def _socket(self, timeout: float) -> socket.socket:
        target = self.target
        try:
            sock = socket.create_connection((target.host, target.port), timeout=timeout)
        except OSError as exc:
            raise ConnectionFailed(
                f"cannot connect to {target.label} ({target.host}:{target.port}): {reason(exc)}"
            ) from exc
        # Without TCP_NODELAY each small command waits on Nagle + delayed ACKs (~40 ms).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for name, value in _TCP_KEEPALIVE.items():
            if hasattr(socket, name):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, name), value)
        return sock

    def _tunnel(self, deadline: Deadline) -> paramiko.Channel:
        """A direct-tcpip channel from the jump host to our target (ProxyJump)."""
        assert self.jump is not None
        jump, target = self.jump, self.target
        dest = (target.host, target.port)
        try:
            chan, _ = jump.channel(
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

    # --- host key and account key ------------------------------------------------------

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
        if self.target.credentials is not None:
            return "(a short-lived certificate)"
        return self.target.key_path or "(given as data)"

    def _certified_key(self) -> tuple[paramiko.PKey, float]:
        """A new key pair with its certificate, and when its connection is due for renewal."""
        assert self.target.credentials is not None
        cert = self.target.credentials()
        pkey = paramiko.Ed25519Key.from_private_key(io.StringIO(cert.private_key.decode()))
        try:
            pkey.load_certificate(cert.certificate)
        except ValueError as exc:  # not this key's certificate, or not one at all
            raise AuthenticationFailed(
                f"the SSH certificate for {self.target.label} does not fit its key: {exc}"
            ) from None
        left = (cert.valid_before - datetime.now(UTC)).total_seconds()
        return pkey, time.monotonic() + left - self.target.renew_before

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


def _carries_channels(conn: paramiko.Transport) -> bool:
    """Whether any channel is open on `conn` (paramiko internals, pinned <6)."""
    if not conn.is_active():
        return False
    return any(not chan.closed for chan in cast(Any, conn)._channels.values())


def _prefer_fast_ciphers(conn: paramiko.Transport) -> None:
    """AES-GCM first (fastest in paramiko, see _PREFERRED_CIPHERS); the rest stay allowed."""
    options = conn.get_security_options()
    available = list(options.ciphers)
    first = [name for name in _PREFERRED_CIPHERS if name in available]
    options.ciphers = first + [name for name in available if name not in first]


def reason(exc: BaseException) -> str:
    """An exception as a short phrase for messages (an OSError's strerror)."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__
