"""Delivery of collected outputs from the gateway store to file:// and https:// URLs: what
each entry sends, what fails the job, and a delivery cut short (lease lost, as when a
worker dies) done again whole by the next worker."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from gateway.domain.deliveries import Delivery
from gateway.services.data.file_urls import FileRoots
from gateway.services.data.https_put import PutFailed
from gateway.store import BlobStore
from gateway.worker.staging.deliver import DeliveryFailed, Sender, Stored, deliver


@pytest.fixture
def store(tmp_path: Path) -> BlobStore:
    return BlobStore(tmp_path / "store")


def stored(store: BlobStore, path: str, data: bytes) -> Stored:
    sha = hashlib.sha256(data).hexdigest()
    incoming = store.new_incoming()
    incoming.write_bytes(data)
    store.promote_file(incoming, sha)
    return Stored(path, len(data), sha)


def test_entries_send_what_they_match(tmp_path: Path, store: BlobStore) -> None:
    home = tmp_path / "home"
    home.mkdir()
    puts: list[tuple[str, bytes]] = []

    def put(url: str, body: BinaryIO, size: int, **_: Any) -> None:
        puts.append((url, body.read()))

    outputs = [stored(store, "tes/o/r.txt", b"r"), stored(store, "tes/o/d/a", b"a"),
               stored(store, "tes/o/d/e/b", b"b")]
    note = deliver([Delivery(glob="tes/o/r.txt", url=f"file://{home}/r.txt"),
                    Delivery(glob="tes/o/d/**", strip="tes/o/d", url="https://h/run/")],
                   outputs, store, Sender(FileRoots((home,)), 5, put), lambda: True)
    assert note == "delivered 3 output(s), 3 bytes"
    assert (home / "r.txt").read_bytes() == b"r"
    assert puts == [("https://h/run/a", b"a"), ("https://h/run/e/b", b"b")]


def test_what_fails_the_job(tmp_path: Path, store: BlobStore) -> None:
    sender = Sender(FileRoots((tmp_path,)), 5)
    outputs = [stored(store, "a.txt", b"a"), stored(store, "b.txt", b"b")]
    for entry, says in (
            (Delivery(glob="missing.txt", url=f"file://{tmp_path}/m"), "left no file"),
            (Delivery(glob="*.txt", url=f"file://{tmp_path}/m"), "matched 2 files"),
            (Delivery(glob="a.txt", url="file:///etc/a"), "outside the directories")):
        with pytest.raises(DeliveryFailed, match=says):
            deliver([entry], outputs, store, sender, lambda: True)

    def refused(url: str, body: BinaryIO, size: int, **_: Any) -> None:
        raise PutFailed(f"{url} answered the PUT with HTTP 403 Forbidden")

    with pytest.raises(DeliveryFailed, match=r"a.txt was not delivered: .*403"):
        deliver([Delivery(glob="a.txt", url="https://h/a")], outputs, store,
                Sender(sender.roots, 5, refused), lambda: True)
    # Nothing matched by a directory entry is no fault: an empty directory.
    assert deliver([Delivery(glob="d/**", strip="d", url=f"file://{tmp_path}/d")], outputs,
                   store, sender, lambda: True) == "delivered 0 output(s), 0 bytes"


def test_a_delivery_cut_short_is_done_again_whole(tmp_path: Path, store: BlobStore) -> None:
    outputs = [stored(store, f"o/{n}", n.encode() * 3) for n in "abc"]
    entry = [Delivery(glob="o/*", strip="o", url=f"file://{tmp_path}/out")]
    sender = Sender(FileRoots((tmp_path,)), 5)
    leases = iter([True, False])
    assert deliver(entry, outputs, store, sender, lambda: next(leases)) is None
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a"]
    (tmp_path / "out/a").write_bytes(b"changed by someone")
    assert deliver(entry, outputs, store, sender, lambda: True) is not None
    assert {p.name: p.read_bytes() for p in (tmp_path / "out").iterdir()} == {
        "a": b"aaa", "b": b"bbb", "c": b"ccc"}
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a", "b", "c"]
