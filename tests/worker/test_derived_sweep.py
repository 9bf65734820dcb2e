"""The store's extracted image partitions (derived/<sif sha256>.squashfs and its sidecar)
are swept once their SIF has left the store and nothing used them for a while; a partition
whose SIF is still there, or that was used recently, stays. A SIF whose bytes no longer
match its digest is never extracted."""

from __future__ import annotations

import hashlib
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from adapters.transfer import StagedFile
from adapters.transfer.sources import LocalFile
from gateway.services.data.input_sources import InputUnavailable, ResolvedInput
from gateway.store import BlobStore
from gateway.worker.staging import stage_image
from gateway.worker.staging.stage_image import DERIVED_DIR, squashfs_of, sweep_derived
from tests.containers.conftest import build, make_rootfs, need

DAY = 24 * 3600.0


def derived(store: BlobStore, sha: str, age: float) -> Path:
    """A derived pair for SIF `sha`, last touched `age` seconds ago."""
    root = store.root / DERIVED_DIR
    root.mkdir(parents=True, exist_ok=True)
    target = root / f"{sha}.squashfs"
    sidecar = root / f"{sha}.squashfs.sha256"
    target.write_bytes(b"hsqs")
    sidecar.write_text(f"4 {hashlib.sha256(b'hsqs').hexdigest()}\n")
    then = time.time() - age
    for path in (target, sidecar):
        os.utime(path, (then, then))
    return target


def test_only_old_partitions_of_images_gone_from_the_store_are_swept(tmp_path: Path) -> None:
    store = BlobStore(tmp_path / "store")
    kept_blob = hashlib.sha256(b"a sif").hexdigest()
    blob = store.blob_path(kept_blob)
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"a sif")
    in_store = derived(store, kept_blob, 2 * DAY)
    recent = derived(store, "1" * 64, 60)
    orphan = derived(store, "2" * 64, 2 * DAY)
    assert sweep_derived(store, DAY) == 1
    assert not orphan.exists() and not orphan.with_name(orphan.name + ".sha256").exists()
    assert in_store.exists() and recent.exists()
    assert sweep_derived(store, DAY) == 0


def test_a_used_partition_is_kept_and_a_damaged_sif_is_never_extracted(
        tmp_path: Path) -> None:
    need("mksquashfs")
    build(make_rootfs(tmp_path / "root"), tmp_path / "app.sif")
    data = (tmp_path / "app.sif").read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    store = BlobStore(tmp_path / "store")
    sif = ResolvedInput(LocalFile(tmp_path / "app.sif"), StagedFile(sha, len(data)))
    part = squashfs_of(store, sif)
    sidecar = store.root / DERIVED_DIR / f"{sha}.squashfs.sha256"
    then = time.time() - 2 * DAY
    os.utime(sidecar, (then, then))
    assert squashfs_of(store, sif) == part  # used again: touched
    assert sweep_derived(store, DAY) == 0
    # The same bytes changed: another digest's extraction is refused, nothing is written.
    (tmp_path / "app.sif").write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    other = ResolvedInput(LocalFile(tmp_path / "app.sif"), StagedFile("3" * 64, len(data)))
    with pytest.raises(InputUnavailable, match="does not match its digest"):
        squashfs_of(store, other)
    assert not (store.root / DERIVED_DIR / f"{'3' * 64}.squashfs").exists()


def test_workers_wanting_one_partition_at_once_extract_it_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two jobs of a new image staged side by side both asked for its partition: both
    # extracted it and wrote the same sidecar part name, and one rename found it gone.
    need("mksquashfs")
    build(make_rootfs(tmp_path / "root"), tmp_path / "app.sif")
    data = (tmp_path / "app.sif").read_bytes()
    sif = ResolvedInput(LocalFile(tmp_path / "app.sif"),
                        StagedFile(hashlib.sha256(data).hexdigest(), len(data)))
    store = BlobStore(tmp_path / "store")
    calls = []
    real = stage_image._extract

    def counted(*args: Any) -> tuple[int, str]:
        calls.append(args)
        time.sleep(0.2)  # long enough for the others to arrive meanwhile
        return real(*args)

    monkeypatch.setattr(stage_image, "_extract", counted)
    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(lambda _: squashfs_of(store, sif), range(4)))
    assert len(calls) == 1 and all(p == parts[0] for p in parts)
    old = time.time() - 2 * DAY
    lock = store.root / DERIVED_DIR / f"{sif.expected.sha256}.lock"
    os.utime(lock, (old, old))
    assert sweep_derived(store, DAY) == 0 and lock.exists()  # its partition is there
    for path in (store.root / DERIVED_DIR).iterdir():
        if path != lock:
            path.unlink()
    sweep_derived(store, DAY)
    assert not lock.exists()
