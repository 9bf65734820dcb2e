"""The Transport protocols: run an argv, put and read files; stream whole files.

Scheduler adapters talk to a `Transport` only, so their builders and parsers are tested on
recorded outputs without sockets and the same adapters run live.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import IO, Protocol, runtime_checkable

# Past this much stdout + stderr a command is stopped: a scheduler query never needs more.
DEFAULT_MAX_OUTPUT_BYTES = 16 << 20


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    exit_status: int
    stdout: bytes
    stderr: bytes


class Transport(Protocol):
    """Runs commands and moves files on one site account."""

    def run(
        self, argv: Sequence[str], *, stdin: bytes | None = None, timeout: float = 60.0
    ) -> CommandResult:
        """Run argv (each element shell-quoted on a remote side; never a raw shell string).

        Raises SiteUnavailable (transient) on connection failures and timeouts, and the
        TransportError subclasses drawn in adapters.errors.
        """
        ...

    def put_bytes(self, data: bytes, path: str, *, mode: int = 0o600) -> None:
        """Write `data` to `path` atomically (temporary name, then rename) with `mode`."""
        ...

    def read_bytes(
        self, path: str, offset: int = 0, limit: int = 1 << 20
    ) -> tuple[bytes, int | None]:
        """Up to `limit` bytes from `offset`, and the file's total size (None if missing)."""
        ...

    def close(self) -> None:
        """Release connections; the transport is not used afterwards."""
        ...


# Called with the bytes moved so far by one upload/download call (not yet acknowledged).
Progress = Callable[[int], None]
# A local file to send: a path, or a readable binary stream (read from where it stands).
LocalSource = str | os.PathLike[str] | IO[bytes]
# Where received bytes go: a path (created or overwritten at `offset`), or a binary stream.
LocalSink = str | os.PathLike[str] | IO[bytes]


class FileTransport(Transport, Protocol):
    """A Transport that also streams whole files, resumably, with progress.

    A separate protocol (not new Transport methods) so that the many small Transports
    (recorded outputs in tests, counting wrappers) stay valid as they are.
    """

    @property
    def write_reorder_bytes(self) -> int:
        """How far an interrupted upload may be out of order: every byte below the
        file's size minus this many was written (0: the file is always a prefix)."""
        ...

    def upload(
        self, source: LocalSource, path: str, *, offset: int = 0, length: int | None = None,
        mode: int = 0o600, progress: Progress | None = None,
    ) -> int:
        """Write `source` into `path` from byte `offset`; return the bytes written.

        offset 0 creates or truncates `path` (with `mode`, set before any data). A larger
        offset continues an existing file: it is first cut to `offset` bytes, so a stale
        tail never survives. A path source is read from `offset`; a stream from where it
        stands. At most `length` bytes are sent (None: to the source's end).
        """
        ...

    def download(
        self, path: str, sink: LocalSink, *, offset: int = 0, length: int | None = None,
        progress: Progress | None = None,
    ) -> int:
        """Copy `path` from byte `offset` (at most `length` bytes) into `sink`; the bytes copied.

        A path sink is opened for writing without truncation and written from `offset`.
        Raises FileTransferError if `path` is missing or unreadable.
        """
        ...


@runtime_checkable
class PreparesUploads(Protocol):
    """A FileTransport that can set up an upload's connections ahead of it."""

    def upload_ahead(self, size: int) -> AbstractContextManager[None]:
        """While the context is open, the connections of this thread's next upload (of
        `size` bytes) are set up in the background: their handshakes overlap the caller's
        steps before it. Ones no upload took are closed when the context ends."""
        ...
