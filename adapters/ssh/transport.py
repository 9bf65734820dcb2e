"""`SshTransport`: the Transport of a site account over SSH, put together from its parts.

    connection.py   one pooled connection: connect, pinned host key, account key, jump
                    host, keepalives, the site's circuit breaker
    sessions.py     session channels: at most max_sessions, two opened ahead
    site_connections.py  a site's accounts keep at most so many idle connections open
    channels.py     commands: one round trip each, deadlines, output cap, killing overruns
    sftp.py         files over SFTP: atomic writes, ranged reads, pipelined copies
    bulk.py         large copies through OpenSSH processes, when the target allows
    send_guard.py   the paramiko#1115 workaround every channel relies on

Only the adapters.ssh package imports paramiko.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator, Sequence

from adapters.ssh.breaker import CircuitBreaker
from adapters.ssh.channels import run_command
from adapters.ssh.connection import SshConnection
from adapters.ssh.openssh.bulk import BulkUnavailable, OpenSshBulk
from adapters.ssh.pool import TransportPool
from adapters.ssh.sessions import Sessions
from adapters.ssh.sftp import SftpFiles
from adapters.ssh.site_connections import SiteConnections
from adapters.ssh.target import SshTarget
from adapters.transport.argv import check_read_range
from adapters.transport.protocol import CommandResult, LocalSink, LocalSource, Progress

log = logging.getLogger("adapters.ssh")

# put_bytes/read_bytes have no timeout argument (the protocol's); this bounds them.
FILE_TIMEOUT_SECONDS = 120.0
# Copies of at least this many bytes go through OpenSSH (adapters.ssh.openssh.bulk) when the
# target allows: starting `ssh` processes costs ~0.1 s, which smaller files don't repay.
BULK_MIN_BYTES = 32 << 20
# Idle connections a site's accounts keep open between them (mapped and certificate
# sites have one per researcher): sshd processes held at the site beyond those at work.
# The gateway's is its setting ssh_idle_connections_per_site.
IDLE_CONNECTIONS_PER_SITE = 64
# A round trip measured before a large copy waits this long at most (then: not measured).
ROUND_TRIP_TIMEOUT_SECONDS = 10.0
ROUND_TRIP_SAMPLES = 3


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
        site: SiteConnections | None = None,
    ) -> None:
        self.target = target
        self.breaker = breaker or CircuitBreaker(target.label)
        self.file_timeout = file_timeout
        self.connection: SshConnection = SshConnection(target, self.breaker,
                                                       jump.connection if jump else None)
        self.sessions = Sessions(self.connection, target.max_sessions, site=site)
        self._files = SftpFiles(self.sessions, file_timeout)
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

    @property
    def connects(self) -> int:
        """SSH connections this transport has opened (pooling shows as 1 for many commands)."""
        return self.connection.connects

    @property
    def connected(self) -> bool:
        return self.connection.connected

    def __repr__(self) -> str:
        return f"SshTransport({self.target.label}, {self.target.address})"

    # --- Transport ---------------------------------------------------------------------

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60.0
    ) -> CommandResult:
        """Run argv in the account's login shell, each element `shlex.quote`d."""
        return run_command(self.sessions, argv, stdin, timeout)

    def put_bytes(self, data: bytes, path: str, *, mode: int = 0o600) -> None:
        """Write through SFTP to a temporary name in the same directory, then rename."""
        self._files.put_bytes(data, path, mode)

    def read_bytes(
        self, path: str, offset: int = 0, limit: int = 1 << 20
    ) -> tuple[bytes, int | None]:
        """Up to `limit` bytes from `offset` through SFTP; (b"", None) if the file is missing."""
        return self._files.read_bytes(path, offset, limit)

    def upload(
        self, source: LocalSource, path: str, *, offset: int = 0, length: int | None = None,
        mode: int = 0o600, progress: Progress | None = None,
    ) -> int:
        """Stream `source` into `path` from `offset` (see FileTransport): over SFTP, or
        through OpenSSH for large copies when the target allows (adapters.ssh.openssh.bulk)."""
        check_read_range(offset, length or 0)
        if self._bulk is not None and _large(_bytes_to_send(source, offset, length)):
            with contextlib.suppress(BulkUnavailable):
                rtt = self.round_trip()
                return self._bulk_copy(lambda b: b.upload(
                    source, path, offset=offset, length=length, mode=mode, progress=progress,
                    rtt=rtt))
        return self._files.upload(source, path, offset, length, mode, progress)

    @contextlib.contextmanager
    def upload_ahead(self, size: int) -> Iterator[None]:
        """See PreparesUploads: starts the OpenSSH processes of a bulk upload early (their
        handshakes take ~0.1 s); a no-op for uploads that go over paramiko."""
        if self._bulk is None or not _large(size) or self.connection.closed:
            yield
            return
        with contextlib.suppress(BulkUnavailable):  # the upload says why, over paramiko
            self._bulk.start_ahead()
        try:
            yield
        finally:
            self._bulk.end_ahead()

    def download(
        self, path: str, sink: LocalSink, *, offset: int = 0, length: int | None = None,
        progress: Progress | None = None,
    ) -> int:
        """Copy `path` from `offset` into `sink` over SFTP, many reads in flight (large
        files through OpenSSH when the target allows)."""
        check_read_range(offset, length or 0)
        if self._bulk is not None and _large(length if length is not None
                                             else self._files.remote_size(path, offset)):
            with contextlib.suppress(BulkUnavailable):
                rtt = self.round_trip()
                return self._bulk_copy(lambda b: b.download(
                    path, sink, offset=offset, length=length, progress=progress, rtt=rtt))
        return self._files.download(path, sink, offset, length, progress)

    def round_trip(self) -> float | None:
        """Seconds a round trip to the site takes now, the least of ROUND_TRIP_SAMPLES
        (see SshConnection.round_trip): what large copies size their streams by. The
        least, because what adds to a round trip here (a first request after the login,
        this process's other threads) is not the link's."""
        least: float | None = None
        for _ in range(ROUND_TRIP_SAMPLES):
            sample = self.connection.round_trip(ROUND_TRIP_TIMEOUT_SECONDS)
            if sample is None:  # no answer in time: asking again would only wait again
                break
            least = sample if least is None else min(least, sample)
        return least

    def close(self) -> None:
        self.sessions.close()
        self.connection.close()
        if self._bulk is not None:
            self._bulk.close()

    def disconnect(self) -> None:
        """Close the current connection now (calls in flight on it fail as a dropped
        connection would); the next call opens a new one. For fault drills and tests."""
        self.connection.disconnect()
        if self._bulk is not None:
            self._bulk.disconnect()

    def _bulk_copy(self, copy: Callable[[OpenSshBulk], int]) -> int:
        """Run `copy` on the OpenSSH path; if `ssh` cannot start a session, log why and
        raise BulkUnavailable (the caller goes on with paramiko)."""
        assert self._bulk is not None
        if self.connection.closed:
            raise self.connection.closed_error()
        try:
            return copy(self._bulk)
        except BulkUnavailable as exc:
            log.warning("%s: bulk copy through OpenSSH unavailable (%s); using paramiko",
                        self.target.label, exc)
            raise


class SshTransportPool(TransportPool[SshTransport]):
    """`pool.get(target)` -> the shared SshTransport for (host, port, user); the accounts
    of one site keep at most `idle_per_site` idle connections open between them
    (adapters.ssh.site_connections)."""

    def __init__(self, idle_per_site: int = IDLE_CONNECTIONS_PER_SITE) -> None:
        sites: dict[str, SiteConnections] = {}

        def site(label: str) -> SiteConnections:
            # Called by the factory, under the pool's lock.
            if label not in sites:
                sites[label] = SiteConnections(label, idle_per_site)
            return sites[label]

        super().__init__(lambda target, breaker, jump: SshTransport(
            target, breaker=breaker, jump=jump, site=site(target.label)))


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
