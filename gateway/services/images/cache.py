"""The gateway's store of SIF images it fetched for sites: pulled from registries
(gateway.services.images.registry_pull) or downloaded from https://
(gateway.services.images.https_images).

`registry/sif/<sha256>.sif` holds each SIF once; names point at it: `registry/<hex>` ("SHA256
SIZE") names it by the digest of the manifest (or index) it came from, written after the
SIF, so a name never points at half a file. Whoever fetches an image holds a lock on its
name (`registry/locks/`, flock: released when the process dies), so workers wanting one
image at once fetch it once. A SIF unused for a while is swept, and the names left
pointing at nothing with it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import time
import uuid
from pathlib import Path

from adapters.transfer import LocalFile
from adapters.transfer.staging import StagedFile
from gateway.services.data.input_sources import ResolvedInput
from gateway.store import BlobStore
from gateway.store.files import held

IMAGE_CACHE_DIR = "registry"


class ImageCache:
    """The store's fetched SIFs (see module)."""

    def __init__(self, store: BlobStore) -> None:
        self.root = store.root / IMAGE_CACHE_DIR
        self.sifs = self.root / "sif"

    def sif(self, sha256: str, size: int) -> ResolvedInput | None:
        """The cached SIF `sha256` if it is there whole, marked as used now."""
        path = self.sifs / f"{sha256}.sif"
        try:
            if path.stat().st_size != size:
                return None
            os.utime(path)  # sweep_image_cache keeps it a while longer
        except OSError:
            return None
        return ResolvedInput(LocalFile(path), StagedFile(sha256, size))

    def get(self, digest: str) -> ResolvedInput | None:
        """The SIF cached for the manifest `digest`, marked as used now."""
        found = self.get_quietly(digest)
        if found is not None:
            with contextlib.suppress(FileNotFoundError):
                os.utime(self.sifs / f"{found.expected.sha256}.sif")  # sweep_image_cache
        return found

    def get_quietly(self, digest: str) -> ResolvedInput | None:
        entry = self.root / digest.removeprefix("sha256:")
        try:
            sha, size_text = entry.read_text().split()
            sif = self.sifs / f"{sha}.sif"
            if sif.stat().st_size != int(size_text):
                return None
        except (OSError, ValueError):
            return None
        return ResolvedInput(LocalFile(sif), StagedFile(sha, int(size_text)))

    def put(self, digests: list[str], sif: Path, sha256: str | None = None) -> ResolvedInput:
        """Move the SIF file `sif` into the cache (hashed here unless `sha256` is given)
        and name it by each of `digests`."""
        if sha256 is None:
            digest = hashlib.sha256()
            with sif.open("rb") as stream:
                while block := stream.read(1 << 20):
                    digest.update(block)
            sha256 = digest.hexdigest()
        size = sif.stat().st_size
        self.sifs.mkdir(mode=0o700, parents=True, exist_ok=True)
        final = self.sifs / f"{sha256}.sif"
        os.replace(sif, final)
        return self.link(digests, ResolvedInput(LocalFile(final), StagedFile(sha256, size)))

    def link(self, digests: list[str], resolved: ResolvedInput) -> ResolvedInput:
        """Name the cached SIF `resolved` by each manifest (or index) digest."""
        for name in digests:
            part = self.root / f"{name.removeprefix('sha256:')}.{uuid.uuid4()}.part"
            part.write_text(f"{resolved.expected.sha256} {resolved.expected.size}\n")
            os.replace(part, self.root / name.removeprefix("sha256:"))
        return resolved

    def locked(self, name: str) -> contextlib.AbstractContextManager[None]:
        """Hold the store's lock on the image `name` (flock: released if the process dies)."""
        return held(self.root / "locks" / f"{name.removeprefix('sha256:')}.lock")


def remove_tree(path: Path) -> None:
    """Remove `path`, read-only directories (as image trees have them) included."""
    for dirpath, _, _ in os.walk(path):
        os.chmod(dirpath, 0o700)
    shutil.rmtree(path, ignore_errors=True)


def sweep_image_cache(store: BlobStore, max_age_seconds: float) -> int:
    """Remove the SIFs unused for `max_age_seconds`, the names left pointing at none, and
    what fetches a crash interrupted left behind; how many SIFs."""
    cache = ImageCache(store)
    if not cache.root.is_dir():
        return 0
    cutoff, removed = time.time() - max_age_seconds, 0
    for sif in cache.sifs.glob("*.sif") if cache.sifs.is_dir() else ():
        with contextlib.suppress(FileNotFoundError):
            if sif.stat().st_mtime < cutoff:
                sif.unlink()
                removed += 1
    for entry in cache.root.iterdir():
        with contextlib.suppress(FileNotFoundError):
            if entry.is_file() and (entry.stat().st_mtime < cutoff if entry.suffix == ".part"
                                    else cache.get_quietly(entry.name) is None):
                entry.unlink()
    for name in ("locks", "work", "https"):
        for leftover in (cache.root / name).iterdir() if (cache.root / name).is_dir() else ():
            with contextlib.suppress(FileNotFoundError):
                if leftover.stat().st_mtime < cutoff:
                    remove_tree(leftover) if leftover.is_dir() else leftover.unlink()
    return removed
