"""`PartWriter`: appends one chunk to an upload's part file, streaming, under a lock.

The lock is an exclusive `flock` on the part file, so two requests (in one gateway
process or several) never write the same upload at once; the second gets Conflict.
"""

from __future__ import annotations

import fcntl
import hashlib
import os

from gateway.domain.errors import Conflict, NotFound
from gateway.store import hashing
from gateway.store.blobs import BlobStore


class PartWriter:
    """Use as a context manager: `begin(offset)`, `write(...)`..., `commit()`. Entering
    alone just holds the upload's lock (finalizing does that).

    Without `commit()` the part file is cut back to where the chunk began, so a
    refused chunk leaves no trace. `commit()` fsyncs and keeps what was written.
    """

    def __init__(self, store: BlobStore, upload_id: str) -> None:
        self.store = store
        self.upload_id = upload_id
        self.start = 0
        self.written = 0
        self._fd = -1
        self._digest: hashlib._Hash | None = None
        self._begun = False
        self._committed = False

    def __enter__(self) -> PartWriter:
        try:
            self._fd = os.open(self.store.part_path(self.upload_id), os.O_RDWR)
        except FileNotFoundError:
            raise NotFound("The gateway no longer holds this upload's data.") from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise Conflict("Another request is writing this upload right now; "
                           "retry when it has finished.") from None
        return self

    def begin(self, offset: int) -> None:
        """Position at `offset` (the bytes the gateway has recorded so far)."""
        size = os.fstat(self._fd).st_size
        if size < offset:
            raise Conflict(f"The gateway holds only {size} of the {offset} bytes it "
                           "recorded for this upload; delete it and upload again.")
        # Bytes past the recorded offset come from a write that was never recorded.
        os.ftruncate(self._fd, offset)
        os.lseek(self._fd, offset, os.SEEK_SET)
        self.start = offset
        self._begun = True
        self._digest = hashing.take(self.store.root, self.upload_id, offset)

    def write(self, data: bytes) -> None:
        """Append `data` (the whole of it)."""
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]
        if self._digest is not None:
            self._digest.update(data)
        self.written += len(data)

    def commit(self) -> int:
        """Make the written bytes durable; returns the new offset."""
        os.fsync(self._fd)
        self._committed = True
        end = self.start + self.written
        if self._digest is not None:
            hashing.keep(self.store.root, self.upload_id, end, self._digest)
        return end

    def rollback(self) -> None:
        """Forget what this writer wrote (the chunk was refused)."""
        if self._begun and not self._committed and self._fd >= 0:
            os.ftruncate(self._fd, self.start)
            self.written = 0

    def __exit__(self, *exc: object) -> None:
        try:
            self.rollback()
        finally:
            # Closing the descriptor releases the flock.
            os.close(self._fd)
            self._fd = -1
