"""Where staged bytes come from: a local file, or a file at another site.

A `Source` opens a readable stream at any offset, so an interrupted transfer resumes
where the destination's partial file ends. A `SiteFile` streams through the gateway: a
thread downloads from the source site into a bounded pipe that the upload reads, so
memory stays at a few MiB whatever the file size.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Protocol

from adapters.transport import FileTransport

# The pipe between a site-to-site download and its upload: this many chunks queued.
PIPE_CHUNKS = 8


class Source(Protocol):
    """Bytes to stage, readable from any offset."""

    def describe(self) -> str: ...

    def open_at(self, offset: int) -> contextlib.AbstractContextManager[IO[bytes]]:
        """A stream of the content from byte `offset`."""
        ...


@dataclass(frozen=True)
class LocalFile:
    """A file on the gateway's own disk (e.g. a finished upload in the gateway store)."""

    path: str | os.PathLike[str]

    def describe(self) -> str:
        return os.fspath(self.path)

    @contextlib.contextmanager
    def open_at(self, offset: int) -> Iterator[IO[bytes]]:
        with open(self.path, "rb") as src:
            src.seek(offset)
            yield src


@dataclass(frozen=True)
class SiteFile:
    """A file at a site, streamed through the gateway when read."""

    transport: FileTransport
    path: str
    # When known, reads ask for exactly the bytes up to it (no size lookup on the site).
    size: int | None = None

    def describe(self) -> str:
        return f"{self.path} (at another site)"

    @contextlib.contextmanager
    def open_at(self, offset: int) -> Iterator[IO[bytes]]:
        pipe = _Pipe()

        def pump() -> None:
            try:
                length = None if self.size is None else max(0, self.size - offset)
                self.transport.download(self.path, pipe,  # type: ignore[arg-type]
                                        offset=offset, length=length)
            except BaseException as exc:  # raised to the reader (unless it went away)
                pipe.fail(exc)
            else:
                pipe.finish()

        thread = threading.Thread(target=pump, name="gridgate-site-copy", daemon=True)
        thread.start()
        try:
            yield pipe  # type: ignore[misc]
        finally:
            pipe.abort()
            thread.join()


class _PipeClosed(Exception):
    """The reader went away; the writer stops."""


class _Pipe:
    """A bounded byte pipe between two threads: `write` blocks while it is full."""

    def __init__(self) -> None:
        self._queue: queue.Queue[bytes | BaseException | None] = queue.Queue(PIPE_CHUNKS)
        self._buffer = b""
        self._eof = False
        self._aborted = threading.Event()

    # writer side (the download thread)
    def write(self, data: bytes) -> int:
        while not self._aborted.is_set():
            try:
                self._queue.put(bytes(data), timeout=0.2)
                return len(data)
            except queue.Full:
                continue
        raise _PipeClosed("the upload side stopped reading")

    def finish(self) -> None:
        """End of data."""
        self._put_last(None)

    def fail(self, exc: BaseException) -> None:
        """The writer failed: the reader raises `exc` once it has read what came before."""
        self._put_last(exc)

    def _put_last(self, item: BaseException | None) -> None:
        while not self._aborted.is_set():
            try:
                self._queue.put(item, timeout=0.2)
                return
            except queue.Full:
                continue

    def flush(self) -> None:
        """Streams are flushed by their users; nothing is held here."""

    # reader side (the upload)
    def read(self, size: int = -1) -> bytes:
        parts, have = [self._buffer], len(self._buffer)
        while not self._eof and (size < 0 or have < size):
            item = self._queue.get()
            if item is None:
                self._eof = True
            elif isinstance(item, BaseException):
                self._buffer = b""
                raise item
            else:
                parts.append(item)
                have += len(item)
        data = b"".join(parts)
        if size < 0 or len(data) <= size:
            self._buffer = b""
            return data
        self._buffer = data[size:]
        return data[:size]

    def abort(self) -> None:
        self._aborted.set()
        with contextlib.suppress(queue.Empty):
            while True:
                self._queue.get_nowait()
