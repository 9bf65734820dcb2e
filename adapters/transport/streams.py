"""Local ends of file copies (shared by the local and the SSH transport)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import IO

from adapters.transport.protocol import LocalSink, LocalSource, Progress

# Local file I/O moves this much per read/write call.
_FILE_CHUNK = 1 << 20


@contextlib.contextmanager
def open_source(source: LocalSource, offset: int) -> Iterator[IO[bytes]]:
    """`source` as a readable stream: a path opened at `offset`, a stream as it is."""
    if isinstance(source, str | os.PathLike):
        with open(source, "rb") as src:
            src.seek(offset)
            yield src
    else:
        yield source


@contextlib.contextmanager
def open_sink(sink: LocalSink, offset: int) -> Iterator[IO[bytes]]:
    """`sink` as a writable stream: a path created if missing (0600), cut and positioned
    at `offset`; a stream as it is."""
    if isinstance(sink, str | os.PathLike):
        fd = os.open(sink, os.O_WRONLY | os.O_CREAT, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.truncate(offset)
            out.seek(offset)
            yield out
    else:
        yield sink


def copy_stream(
    src: IO[bytes], write: Callable[[bytes], object], length: int | None,
    progress: Progress | None, chunk: int = _FILE_CHUNK,
) -> int:
    """Copy from `src` to `write` until EOF or `length` bytes; report progress; the count."""
    done = 0
    while length is None or done < length:
        want = chunk if length is None else min(chunk, length - done)
        data = src.read(want)
        if not data:
            break
        write(data)
        done += len(data)
        if progress is not None:
            progress(done)
    return done
