"""Files over SFTP on the pooled connection: atomic small writes, ranged reads, and
pipelined, resumable whole-file copies. Each operation is one SFTP session (one channel,
one session slot) bounded by the file timeout."""

from __future__ import annotations

import contextlib
import posixpath
import uuid
from collections.abc import Iterator

import paramiko

from adapters.errors import CommandTimeout, ConnectionFailed, FileTransferError, TransportError
from adapters.ssh.channels import start
from adapters.ssh.connection import Deadline, reason
from adapters.ssh.sessions import Sessions
from adapters.transport.argv import check_read_range
from adapters.transport.protocol import LocalSink, LocalSource, Progress
from adapters.transport.streams import copy_stream, open_sink, open_source

# Tuning measured on the testbed (benchmarks/staging_throughput.py), with the window and
# packet sizes of adapters.ssh.connection:
# - SFTP requests of 255 KiB: OpenSSH's sftp-server takes messages up to 256 KiB and
#   reads up to 255 KiB (SFTP_MAX_READ_LENGTH), 8x fewer round trips than 32 KiB.
_SFTP_REQUEST_BYTES = 255 << 10
# - Downloads keep this many reads in flight, in windows of this many bytes (bounded
#   memory even when the sink, e.g. an upload to another site, is slower).
_READS_IN_FLIGHT = 64
_READ_WINDOW_BYTES = 32 << 20
# Uploads hand paramiko this much per write (it splits it into requests, pipelined).
_WRITE_CHUNK_BYTES = 4 << 20


class SftpFiles:
    """File operations of one SshTransport, each within `timeout` seconds."""

    def __init__(self, sessions: Sessions, timeout: float) -> None:
        self.sessions = sessions
        self.timeout = timeout

    @property
    def _label(self) -> str:
        return self.sessions.connection.target.label

    def put_bytes(self, data: bytes, path: str, mode: int) -> None:
        """Write to a temporary name in the same directory, then rename."""
        directory, name = posixpath.split(path)
        tmp = posixpath.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.tmp")
        with self._session(f"writing {path}") as (sftp, conn):
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
                raise self._error(exc, conn, path, "write") from exc

    def read_bytes(self, path: str, offset: int, limit: int) -> tuple[bytes, int | None]:
        """Up to `limit` bytes from `offset`; (b"", None) if the file is missing."""
        check_read_range(offset, limit)
        with self._session(f"reading {path}") as (sftp, conn):
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
                raise self._error(exc, conn, path, "read") from exc

    def upload(self, source: LocalSource, path: str, offset: int, length: int | None,
               mode: int, progress: Progress | None) -> int:
        """Stream `source` into `path` from `offset` (see FileTransport.upload).

        Writes are pipelined in 255 KiB requests; the server acknowledges them in order,
        so after a dropped connection the file holds a prefix of what was sent.
        """
        with self._session(f"writing {path}") as (sftp, conn):
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
                raise self._error(exc, conn, path, "write") from exc

    def download(self, path: str, sink: LocalSink, offset: int, length: int | None,
                 progress: Progress | None) -> int:
        """Copy `path` from `offset` into `sink`, many reads in flight."""
        with self._session(f"reading {path}") as (sftp, conn):
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
                raise self._error(exc, conn, path, "read") from exc

    def remote_size(self, path: str, offset: int) -> int | None:
        """Bytes of `path` past `offset` (None if it cannot be read: paramiko says why)."""
        with self._session(f"reading {path}") as (sftp, _conn):
            try:
                return max(0, (sftp.stat(path).st_size or 0) - offset)
            except OSError:
                return None

    @contextlib.contextmanager
    def _session(self, what: str) -> Iterator[tuple[paramiko.SFTPClient, paramiko.Transport]]:
        deadline = Deadline(self.timeout)
        with self.sessions.session(deadline, what) as (chan, conn):
            start(chan, conn, deadline, lambda: chan.invoke_subsystem("sftp"), what,
                  self._label)
            chan.settimeout(max(0.001, deadline.remaining()))
            try:
                sftp = paramiko.SFTPClient(chan)
            except Exception as exc:
                raise self._error(exc, conn, what, "start SFTP for") from exc
            yield sftp, conn

    def _error(self, exc: BaseException, conn: paramiko.Transport, path: str,
               action: str) -> TransportError:
        if isinstance(exc, TransportError):
            return exc
        if isinstance(exc, TimeoutError):
            return CommandTimeout(f"{action} {path} on {self._label} timed out")
        if not conn.is_active() or isinstance(exc, EOFError | paramiko.SSHException):
            return ConnectionFailed(
                f"connection to {self._label} lost during {action} {path}: {reason(exc)}"
            )
        return FileTransferError(
            f"cannot {action} {path} on {self._label}: {reason(exc)}", path=path
        )
