"""Pruning a staging cache over LocalTransport: real files, real find/stat/rm on this box."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from pathlib import Path

import pytest

from adapters.transfer import site_fs, stage_file
from adapters.transfer.cache_prune import Pruned, prune
from adapters.transport import LocalTransport

DAY = 86400.0


def sha(name: str) -> str:
    return hashlib.sha256(name.encode()).hexdigest()


def age(path: Path, days: float) -> Path:
    then = time.time() - days * DAY
    os.utime(path, (then, then), follow_symlinks=False)
    return path


def entry(cache: Path, name: str, days: float, size: int = 100) -> Path:
    path = cache / sha(name)
    path.write_bytes(b"x" * size)
    return age(path, days)


def unpacked(cache: Path, name: str, days: float) -> Path:
    tree = cache / f"{sha(name)}.d"
    (tree / "ro").mkdir(parents=True)
    (tree / "ro" / "file").write_text("x")
    (tree / "ro").chmod(0o555)  # as an image's read-only directories are unpacked
    return age(tree, days)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    path = tmp_path / ".gridgate-cache"
    path.mkdir(mode=0o700)
    return path


def test_only_what_no_job_holds_and_nobody_touched_lately_goes(cache: Path,
                                                              tmp_path: Path) -> None:
    job = tmp_path / "job-1"
    job.mkdir()
    old_alone = entry(cache, "old alone", 30, size=1234)
    old_linked = entry(cache, "old linked", 30)
    os.link(old_linked, job / ".gridgate-image")
    fresh_alone = entry(cache, "fresh alone", 1)
    # Unpacked images: one whose file is gone, one whose file a job holds, one fresh.
    gone_tree = unpacked(cache, "old alone", 30)
    held_tree = unpacked(cache, "old linked", 30)
    fresh_tree = unpacked(cache, "fresh tree", 1)
    old_partial = cache / f".{sha('half sent')}.gw-partial"
    old_partial.write_bytes(b"y" * 10)
    age(old_partial, 30)
    fresh_partial = cache / f".{sha('being sent')}.gw-partial"
    fresh_partial.write_bytes(b"z")
    # An entry being staged right now: its lock is held, so it waits for the next prune.
    locked = entry(cache, "locked", 30)
    (cache / f".{sha('locked')}.gw-lock").mkdir()
    # Names that are not entries, old as they are.
    others = [cache / name for name in ("README", "abc", sha("x")[:63])]
    for other in others:
        other.write_text("keep")
        age(other, 30)
    (cache / sha("link")).symlink_to(fresh_alone)
    age(cache / sha("link"), 30)

    result = prune(LocalTransport(), str(cache), idle_seconds=14 * DAY)

    assert result == Pruned(files=1, unpacked=1, partials=1, bytes_freed=1234 + 10)
    assert not old_alone.exists() and not gone_tree.exists() and not old_partial.exists()
    for kept in (old_linked, fresh_alone, held_tree, fresh_tree, fresh_partial, locked,
                 *others, cache / sha("link")):
        assert os.path.lexists(kept), kept
    assert (job / ".gridgate-image").read_bytes() == b"x" * 100
    assert not any(p.name.endswith(".gw-lock") and p.name != f".{sha('locked')}.gw-lock"
                   for p in cache.iterdir())  # its own locks released


def test_a_job_directory_let_go_frees_the_entry_at_the_next_prune(cache: Path,
                                                                  tmp_path: Path) -> None:
    job = tmp_path / "job-1"
    job.mkdir()
    held = entry(cache, "image", 30)
    os.link(held, job / ".gridgate-image")
    tree = unpacked(cache, "image", 30)
    assert prune(LocalTransport(), str(cache), idle_seconds=14 * DAY) == Pruned()
    (job / ".gridgate-image").unlink()  # the user removed the job directory's files
    assert prune(LocalTransport(), str(cache), idle_seconds=14 * DAY) == Pruned(
        files=1, unpacked=1, bytes_freed=100)
    assert not held.exists() and not tree.exists()


def test_a_missing_cache_is_empty(tmp_path: Path) -> None:
    assert prune(LocalTransport(), str(tmp_path / "none"), idle_seconds=DAY) == Pruned()
    with pytest.raises(ValueError, match="absolute"):
        prune(LocalTransport(), "cache", idle_seconds=DAY)


def test_a_pruned_entry_is_staged_again(cache: Path, tmp_path: Path) -> None:
    source = tmp_path / "data.bin"
    source.write_bytes(os.urandom(4096))
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    first = stage_file(LocalTransport(), str(source), digest, 4096,
                       str(tmp_path / "job-1" / "in"), cache_dir=str(cache))
    assert not first.cached
    (tmp_path / "job-1" / "in").unlink()
    age(cache / digest, 30)
    assert prune(LocalTransport(), str(cache), idle_seconds=14 * DAY).files == 1
    again = stage_file(LocalTransport(), str(source), digest, 4096,
                       str(tmp_path / "job-2" / "in"), cache_dir=str(cache))
    assert not again.cached and again.bytes_sent == 4096
    assert (tmp_path / "job-2" / "in").read_bytes() == source.read_bytes()


def test_an_entry_removed_between_hash_and_link_reads_as_missing(tmp_path: Path) -> None:
    # The place script's tail once the file hashed right, the file gone meanwhile (a
    # prune between the hash and the link): the caller sends the content again.
    gone = tmp_path / "entry"
    script = f'h={sha("content")}\n' + site_fs.PLACE_TAIL
    done = subprocess.run(["sh", "-c", script, "place", str(gone), "7", sha("content"), "",
                           "", str(tmp_path / "dest"), str(tmp_path / ".dest.part")],
                          capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "missing"), done.stderr
