"""Running sha256 of partial uploads, kept in process memory between chunks.

A hash state cannot be persisted, so this is a cache: the chunk writer continues the
digest when it holds the state for exactly the offset being appended at. Whenever it
does not (a gateway restart, another gateway process took a chunk, eviction), the
digest is simply recomputed from the part file when the upload is finalized.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from pathlib import Path

# Each entry is ~200 bytes; the bound only matters for abandoned uploads.
MAX_ENTRIES = 4096

_lock = threading.Lock()
_states: OrderedDict[tuple[Path, str], tuple[int, hashlib._Hash]] = OrderedDict()


def take(root: Path, upload_id: str, offset: int) -> hashlib._Hash | None:
    """The running digest of the first `offset` bytes, removed from the cache; a fresh
    one at offset 0; None when unknown (the caller then stops hashing this upload)."""
    with _lock:
        entry = _states.pop((root, upload_id), None)
    if offset == 0:
        return hashlib.sha256()
    if entry is not None and entry[0] == offset:
        return entry[1]
    return None


def keep(root: Path, upload_id: str, offset: int, digest: hashlib._Hash) -> None:
    """Remember `digest` as covering the first `offset` bytes of the upload."""
    with _lock:
        _states[(root, upload_id)] = (offset, digest)
        _states.move_to_end((root, upload_id))
        while len(_states) > MAX_ENTRIES:
            _states.popitem(last=False)


def peek(root: Path, upload_id: str, offset: int) -> str | None:
    """The hex digest of the first `offset` bytes if the cache has exactly that."""
    with _lock:
        entry = _states.get((root, upload_id))
    if offset == 0:
        return hashlib.sha256().hexdigest()
    if entry is None or entry[0] != offset:
        return None
    return entry[1].copy().hexdigest()


def forget(root: Path, upload_id: str) -> None:
    """Drop the upload's state (finalized, reset, expired or deleted)."""
    with _lock:
        _states.pop((root, upload_id), None)
