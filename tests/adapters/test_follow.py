"""Hashing on the site while the bytes arrive (adapters.transfer.follow), over
LocalTransport: real files, real coreutils/OpenSSL on this box. The same on a real sshd
with striped OpenSSH uploads: tests/ssh/test_staging_ssh.py."""

from __future__ import annotations

import hashlib
import io
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from adapters.transfer import StagedFile, stage, staging
from adapters.transfer.follow import Follower
from adapters.transfer.sources import LocalFile
from adapters.transport import LocalTransport

SIZE = 3 * (1 << 20) + 4321


class Recording(LocalTransport):
    """Records what each verify command answered; can damage bytes in transit (the first
    upload writes byte 1000 flipped) or on the site after the follower is done (the
    partial's byte 1000 flipped just before the first verify command)."""

    def __init__(self, *, in_transit: bool = False, after_follow: bool = False) -> None:
        super().__init__()
        self.in_transit, self.after_follow = in_transit, after_follow
        self.answers: list[str] = []

    def upload(self, source: Any, path: str, **kw: Any) -> int:
        if self.in_transit:
            self.in_transit = False
            data = bytearray(source.read())
            data[1000 - kw.get("offset", 0)] ^= 0xFF
            source = io.BytesIO(bytes(data))
        return super().upload(source, path, **kw)

    def run(self, argv, *, stdin=None, timeout=60.0):  # type: ignore[no-untyped-def]
        verify = argv[:2] == ["sh", "-c"] and argv[3] == "gridgate-verify"
        if verify and self.after_follow and argv[4].endswith(".gw-partial"):
            self.after_follow = False
            with open(argv[4], "r+b") as f:
                f.seek(1000)
                byte = f.read(1)
                f.seek(1000)
                f.write(bytes([byte[0] ^ 0xFF]))
        result = super().run(argv, stdin=stdin, timeout=timeout)
        if verify:
            self.answers.append(result.stdout.decode().strip())
        return result


@pytest.fixture
def content(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "src.bin"
    path.write_bytes(os.urandom(SIZE))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(autouse=True)
def follow_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(staging, "FOLLOW_MIN_BYTES", 1)


def staged(transport: Recording, tmp_path: Path, content: tuple[Path, str]) -> None:
    src, digest = content
    dest = tmp_path / "job" / "in.bin"
    stage(transport, LocalFile(src), StagedFile(digest, SIZE), str(dest),
                   cache_dir=str(tmp_path / "cache"))
    assert dest.read_bytes() == src.read_bytes()
    assert (tmp_path / "cache" / digest).read_bytes() == src.read_bytes()
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [digest]


def test_hashed_while_it_arrives_is_placed_without_hashing_again(
        tmp_path: Path, content: tuple[Path, str]) -> None:
    transport = Recording()
    staged(transport, tmp_path, content)
    assert transport.answers == ["missing", "placed hashed-on-arrival"]


def test_bytes_damaged_in_transit_are_detected_and_resent(
        tmp_path: Path, content: tuple[Path, str]) -> None:
    transport = Recording(in_transit=True)
    staged(transport, tmp_path, content)
    wrong = bytearray(content[0].read_bytes())
    wrong[1000] ^= 0xFF
    assert transport.answers == ["missing", f"mismatch {hashlib.sha256(wrong).hexdigest()}",
                                 "placed hashed-on-arrival"]


def test_a_change_after_the_follower_read_the_file_is_hashed_again_and_resent(
        tmp_path: Path, content: tuple[Path, str]) -> None:
    """The follower hashed the right bytes; then the file changed (its ctime moved): the
    verify command hashes it again instead of trusting the follower, and it is resent."""
    transport = Recording(after_follow=True)
    staged(transport, tmp_path, content)
    assert transport.answers[0] == "missing"
    assert transport.answers[1].startswith("mismatch ")
    assert transport.answers[2] == "placed hashed-on-arrival"


def test_the_follower_reads_only_what_is_written_and_gives_up_on_a_stall(
        tmp_path: Path) -> None:
    """Written in pieces with pauses, holes ahead of the reorder bound: the follower's hash
    is the whole file's. A file that stops growing: it gives up, with a hash of a prefix."""
    data = os.urandom(1 << 20)
    path = tmp_path / "grows.bin"
    follower = Follower(LocalTransport(), str(path), len(data), 250_000, poll=0.01)

    def write() -> None:
        with open(path, "wb") as f:
            for start in range(0, len(data), 200_000):
                # Each piece lands with a hole below it (filled next): out of order, as a
                # striped upload leaves it, within the reorder bound.
                end = min(start + 200_000, len(data))
                f.seek(start + 50_000)
                f.write(data[start + 50_000:end])
                f.flush()
                time.sleep(0.03)
                f.seek(start)
                f.write(data[start:start + 50_000])
                f.flush()

    writer = threading.Thread(target=write)
    writer.start()
    writer.join()
    hashed = follower.result(wait=30)
    assert hashed is not None and hashed.sha256 == hashlib.sha256(data).hexdigest()

    stalled = tmp_path / "stalls.bin"
    stalled.write_bytes(data[:1000])
    slow = Follower(LocalTransport(), str(stalled), len(data), 0, poll=0.01, stall=0.2)
    hashed = slow.result(wait=30)
    assert hashed is None or hashed.sha256 != hashlib.sha256(data).hexdigest()
