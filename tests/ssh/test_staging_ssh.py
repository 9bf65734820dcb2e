"""Verified staging of a large file to a real sshd on 127.0.0.1: a striped OpenSSH upload,
verified on the site as it arrives by one command that then renames, unlocks and links
(adapters.transfer.follow); a stripe damaged in transit is detected and resent."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import IO, Any

import pytest

from adapters.ssh import SshTransport
from adapters.ssh.transport import BULK_MIN_BYTES
from adapters.transfer import StagedFile, stage
from adapters.transfer.sources import LocalFile

MIB = 1 << 20
FLIP_AT = 20 * MIB + 12345  # inside a stripe of the middle of the file


class Flipping:
    """A source stream that hands byte FLIP_AT out flipped."""

    def __init__(self, inner: IO[bytes], start: int) -> None:
        self.inner, self.pos = inner, start

    def read(self, n: int = -1) -> bytes:
        data = bytearray(self.inner.read(n))
        if self.pos <= FLIP_AT < self.pos + len(data):
            data[FLIP_AT - self.pos] ^= 0xFF
        self.pos += len(data)
        return bytes(data)


class Watching:
    """The transport, recording what each verify command answered; the first upload can
    damage one byte in transit."""

    def __init__(self, inner: SshTransport, *, damage: bool = False) -> None:
        self.inner, self.damage = inner, damage
        self.answers: list[str] = []

    @property
    def write_reorder_bytes(self) -> int:
        return self.inner.write_reorder_bytes

    def run(self, argv: list[str], **kw: Any) -> Any:
        result = self.inner.run(argv, **kw)
        if argv[:2] == ["sh", "-c"] and argv[3] in ("gridgate-verify", "gridgate-follow"):
            self.answers.append(f"{argv[3]}: {result.stdout.decode().strip()}")
        return result

    def upload(self, source: Any, path: str, **kw: Any) -> int:
        if self.damage:
            self.damage = False
            source = Flipping(source, kw.get("offset", 0))
        return self.inner.upload(source, path, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, bytes, str]:
    data = os.urandom(BULK_MIN_BYTES + 5 * MIB + 17)
    path = tmp_path_factory.mktemp("stage") / "big.bin"
    path.write_bytes(data)
    return path, data, hashlib.sha256(data).hexdigest()


def staged(files: Watching, remote_dir: Path, big: tuple[Path, bytes, str]) -> Any:
    source, data, digest = big
    dest = remote_dir / "job" / "in.bin"
    result = stage(files, LocalFile(source), StagedFile(digest, len(data)), str(dest),
                   cache_dir=str(remote_dir / "cache"))
    assert dest.read_bytes() == data
    assert sorted(p.name for p in (remote_dir / "cache").iterdir()) == [digest]
    return result


def test_a_large_file_is_striped_then_verified_and_placed_in_one_command(
        transport: SshTransport, remote_dir: Path, big: tuple[Path, bytes, str]) -> None:
    files = Watching(transport)
    result = staged(files, remote_dir, big)
    assert transport.bulk is not None and transport.bulk.connects == 2  # striped
    assert (result.bytes_sent, result.resends) == (len(big[1]), 0)
    # Verified and placed as it arrived: no command after the upload.
    assert files.answers == ["gridgate-follow: placed"]


def test_a_stripe_damaged_in_transit_is_detected_and_resent(
        transport: SshTransport, remote_dir: Path, big: tuple[Path, bytes, str]) -> None:
    files = Watching(transport, damage=True)
    result = staged(files, remote_dir, big)
    wrong = bytearray(big[1])
    wrong[FLIP_AT] ^= 0xFF
    assert files.answers == [
        f"gridgate-follow: mismatch {hashlib.sha256(wrong).hexdigest()}",
        "gridgate-follow: placed"]
    assert (result.bytes_sent, result.resends) == (2 * len(big[1]), 1)
