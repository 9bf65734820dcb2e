"""The gateway store on a real filesystem: part files, locks, blobs."""

from __future__ import annotations

import hashlib
import stat
import uuid
from pathlib import Path

import pytest

from gateway.domain.errors import Conflict, NotFound
from gateway.store import BlobStore, PartWriter, hashing


@pytest.fixture
def store(tmp_path: Path) -> BlobStore:
    return BlobStore(tmp_path / "store")


def new_part(store: BlobStore) -> str:
    upload_id = str(uuid.uuid4())
    store.create_part(upload_id)
    return upload_id


def test_one_writer_at_a_time(store: BlobStore) -> None:
    upload_id = new_part(store)
    with PartWriter(store, upload_id) as writer:
        writer.begin(0)
        with pytest.raises(Conflict, match="Another request"):
            PartWriter(store, upload_id).__enter__()
        writer.write(b"abc")
        writer.commit()
    with PartWriter(store, upload_id) as again:  # the lock went with the first writer
        again.begin(3)
        again.write(b"def")
        again.commit()
    assert store.part_path(upload_id).read_bytes() == b"abcdef"


def test_uncommitted_chunk_leaves_no_trace_and_stray_bytes_are_cut(store: BlobStore) -> None:
    upload_id = new_part(store)
    with PartWriter(store, upload_id) as writer:
        writer.begin(0)
        writer.write(b"kept")
        writer.commit()
    with PartWriter(store, upload_id) as writer:
        writer.begin(4)
        writer.write(b"refused")
    assert store.part_path(upload_id).read_bytes() == b"kept"
    # Bytes written past the recorded offset (a crash before recording) are dropped.
    with store.part_path(upload_id).open("ab") as f:
        f.write(b"stray")
    with PartWriter(store, upload_id) as writer:
        writer.begin(4)
        writer.write(b"!")
        writer.commit()
    assert store.part_path(upload_id).read_bytes() == b"kept!"
    with PartWriter(store, upload_id) as writer, pytest.raises(Conflict, match="holds only"):
        writer.begin(100)


def test_running_digest_only_when_contiguous(store: BlobStore) -> None:
    upload_id = new_part(store)
    with PartWriter(store, upload_id) as writer:
        writer.begin(0)
        writer.write(b"hello ")
        writer.commit()
    with PartWriter(store, upload_id) as writer:
        writer.begin(6)
        writer.write(b"world")
        writer.commit()
    assert hashing.peek(store.root, upload_id, 11) == hashlib.sha256(b"hello world").hexdigest()
    assert hashing.peek(store.root, upload_id, 6) is None
    hashing.forget(store.root, upload_id)
    assert store.hash_part(upload_id) == (11, hashlib.sha256(b"hello world").hexdigest())


def test_promote_is_content_addressed_private_and_deduplicated(store: BlobStore) -> None:
    data = b"same bytes"
    sha = hashlib.sha256(data).hexdigest()
    first, second = new_part(store), new_part(store)
    for upload_id in (first, second):
        store.part_path(upload_id).write_bytes(data)
    path = store.promote_part(first, sha)
    assert path == store.root / "blobs" / sha[:2] / sha and path.read_bytes() == data
    inode = path.stat().st_ino
    assert store.promote_part(second, sha) == path
    assert path.stat().st_ino == inode, "an existing blob is kept, not rewritten"
    assert not store.part_path(first).exists() and not store.part_path(second).exists()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert store.blob_size(sha) == len(data)
    assert store.remove_blob(sha) and not store.has_blob(sha)
    with pytest.raises(NotFound):
        store.open_blob(sha)


def test_names_cannot_escape_the_store(store: BlobStore) -> None:
    for bad in ("../x", "a/b", "", "x" * 36, "../../../../etc/passwd"):
        with pytest.raises(NotFound):
            store.part_path(bad)
    for bad in ("../" + "a" * 61, "A" * 64, "a" * 63, "g" * 64):
        with pytest.raises(NotFound):
            store.blob_path(bad)
