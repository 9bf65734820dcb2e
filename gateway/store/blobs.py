"""`BlobStore`: where upload bytes live, by upload id while partial, by sha256 once final.

Layout under the store root (directories 0700, files 0600):

    uploads/<upload-id>.part         bytes received so far (the temporary name)
    blobs/<sha256[:2]>/<sha256>      finalized content, one file per distinct content

A blob only ever appears under its final name by an atomic rename of a fully
written, fsynced file, so a reader never sees a half-written blob.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
import uuid
from pathlib import Path
from typing import BinaryIO

from gateway.domain.errors import NotFound
from gateway.store.files import FILE_MODE, fsync_dir, private_dir

_SHA256 = re.compile(r"[0-9a-f]{64}")
_UPLOAD_ID = re.compile(r"[0-9a-f-]{36}")
HASH_BLOCK = 1024 * 1024


def is_sha256(value: str) -> bool:
    """True for a lowercase hex sha256 digest."""
    return bool(_SHA256.fullmatch(value))


class BlobStore:
    """The store rooted at `root` (normally `settings.store_dir`). Cheap to build."""

    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def uploads_dir(self) -> Path:
        return self.root / "uploads"

    @property
    def blobs_dir(self) -> Path:
        return self.root / "blobs"

    # -- partial uploads ----------------------------------------------------------------

    def part_path(self, upload_id: str) -> Path:
        """Where upload `upload_id`'s bytes are held until it is finalized."""
        # The id names a file: never let it carry a separator or '..'.
        if not _UPLOAD_ID.fullmatch(upload_id):
            raise NotFound(f"No upload {upload_id!r}.")
        return self.uploads_dir / f"{upload_id}.part"

    def create_part(self, upload_id: str) -> None:
        """An empty part file for a new upload."""
        private_dir(self.uploads_dir, self.root)
        fd = os.open(self.part_path(upload_id), os.O_WRONLY | os.O_CREAT | os.O_TRUNC,
                     FILE_MODE)
        os.close(fd)

    def remove_part(self, upload_id: str) -> bool:
        """Delete the part file; False when there was none."""
        try:
            self.part_path(upload_id).unlink()
        except FileNotFoundError:
            return False
        return True

    def hash_part(self, upload_id: str) -> tuple[int, str]:
        """(size, sha256) of the part file, read from disk."""
        digest = hashlib.sha256()
        size = 0
        with self.part_path(upload_id).open("rb") as f:
            while block := f.read(HASH_BLOCK):
                digest.update(block)
                size += len(block)
        return size, digest.hexdigest()

    def promote_part(self, upload_id: str, sha256: str) -> Path:
        """Make the (verified) part file the blob `sha256`, atomically; returns its path.
        Content already stored is kept and the part dropped (deduplication)."""
        return self._promote(self.part_path(upload_id), sha256)

    def _promote(self, part: Path, sha256: str) -> Path:
        target = self.blob_path(sha256)
        with part.open("rb+") as f:
            os.fsync(f.fileno())
        private_dir(target.parent, self.root)
        if target.exists():
            part.unlink()
        else:
            # Same filesystem: the rename is atomic, the blob appears whole or not at all.
            os.replace(part, target)
            fsync_dir(target.parent)
        fsync_dir(part.parent)
        return target

    # -- incoming files (fetched outputs, https inputs) ---------------------------------

    @property
    def incoming_dir(self) -> Path:
        return self.root / "incoming"

    def new_incoming(self) -> Path:
        """A fresh, private (0600, empty) file to write a fetched file into."""
        private_dir(self.incoming_dir, self.root)
        path = self.incoming_dir / f"{uuid.uuid4()}.part"
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
        return path

    def sweep_incoming(self, max_age_seconds: float) -> int:
        """Remove incoming files untouched for `max_age_seconds` (left by a process that
        died while fetching or staging); how many."""
        if not self.incoming_dir.is_dir():
            return 0
        cutoff, removed = time.time() - max_age_seconds, 0
        for path in self.incoming_dir.iterdir():
            with contextlib.suppress(FileNotFoundError):
                if path.stat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
        return removed

    def promote_file(self, path: Path, sha256: str) -> Path:
        """Make the verified file `path` (under `incoming_dir`) the blob `sha256`."""
        if path.parent != self.incoming_dir:
            raise ValueError(f"{path} is not an incoming file of this store")
        return self._promote(path, sha256)

    # -- blobs (what the worker stages from) --------------------------------------------

    def blob_path(self, sha256: str) -> Path:
        """The final name of content `sha256` (which may not exist)."""
        if not is_sha256(sha256):
            raise NotFound(f"{sha256!r} is not a sha256 digest.")
        return self.blobs_dir / sha256[:2] / sha256

    def has_blob(self, sha256: str) -> bool:
        """True when content `sha256` is in the store."""
        return self.blob_path(sha256).is_file()

    def blob_size(self, sha256: str) -> int:
        """Size in bytes of blob `sha256`; NotFound when absent."""
        try:
            return self.blob_path(sha256).stat().st_size
        except FileNotFoundError:
            raise NotFound(f"The store holds no content with sha256 {sha256}.") from None

    def open_blob(self, sha256: str) -> BinaryIO:
        """Blob `sha256` opened for reading (binary); NotFound when absent."""
        try:
            return self.blob_path(sha256).open("rb")
        except FileNotFoundError:
            raise NotFound(f"The store holds no content with sha256 {sha256}.") from None

    def remove_blob(self, sha256: str) -> bool:
        """Delete blob `sha256` (the caller checked nothing refers to it)."""
        try:
            self.blob_path(sha256).unlink()
        except FileNotFoundError:
            return False
        return True
