"""Reading a local job's stdout or stderr, never through a symlink the job put there."""

from __future__ import annotations

import os
from collections.abc import Callable

from adapters.base import OutputChunk, OutputStream
from adapters.errors import AdapterError
from adapters.local.files import JobFiles


def read_output(job_files: Callable[[], JobFiles], workdir: str, stream: OutputStream,
                offset: int, limit: int) -> OutputChunk:
    """Up to `limit` bytes of the job's stdout or stderr file from `offset`.

    The arguments are checked before `job_files` resolves the job directory `workdir`.
    """
    if stream not in ("stdout", "stderr"):
        raise AdapterError(f"unknown output stream {stream!r}")
    if offset < 0 or limit < 0:
        raise AdapterError("offset and limit must not be negative")
    path = job_files().output(stream)
    try:
        # The job may replace its output with a symlink; never follow it.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return OutputChunk(b"", offset, None)
    except OSError as exc:
        raise AdapterError(f"cannot read {stream} of {workdir}: {exc}") from exc
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if offset >= size:
            # Nothing there yet; seeking past the file system's largest offset fails.
            return OutputChunk(b"", offset, size)
        f.seek(offset)
        data = f.read(limit)
    # The file may have grown since fstat; never report less than was read.
    return OutputChunk(data, offset, max(size, offset + len(data)) if data else size)
