"""The claim command (adapters.transfer.claim) on this machine's file system: what it
does before a staging into a cache sends anything, in one round trip."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from adapters.transfer import site_fs
from adapters.transfer.claim import Claimed, claim
from adapters.transfer.site_lock import lock_name, own_holder
from adapters.transport import LocalTransport

DATA = os.urandom(70_000)
SHA = hashlib.sha256(DATA).hexdigest()


def _claim(tmp_path: Path, job: Path | None = None) -> Claimed:
    cache = tmp_path / "cache"
    entry = cache / SHA
    return claim(LocalTransport(), str(job or tmp_path / "job"), str(cache), str(entry),
                 len(DATA), SHA, str((job or tmp_path / "job") / "in"),
                 site_fs.partial_name(str(entry)))


def test_a_miss_takes_the_lock_and_reports_the_sizes(tmp_path: Path) -> None:
    first = _claim(tmp_path)
    assert first == Claimed(placed=False, answer="taken", entry_size=None, partial_size=None)
    lock = Path(lock_name(str(tmp_path / "cache"), SHA))
    assert (lock / "holder").read_text().strip() == own_holder()
    assert oct((tmp_path / "job").stat().st_mode & 0o777) == "0o700"
    # A second claimant finds it held (by us), and the partial's size is not its business.
    Path(site_fs.partial_name(str(tmp_path / "cache" / SHA))).write_bytes(DATA[:5])
    assert _claim(tmp_path) == Claimed(placed=False, answer=f"held\n{own_holder()}")
    (lock / "holder").unlink()
    lock.rmdir()
    assert _claim(tmp_path).partial_size == 5


def test_a_hit_is_linked_and_a_changed_entry_dropped(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir(mode=0o700)
    (tmp_path / "cache" / SHA).write_bytes(DATA)
    assert _claim(tmp_path) == Claimed(placed=True)
    assert (tmp_path / "job" / "in").read_bytes() == DATA
    assert not Path(lock_name(str(tmp_path / "cache"), SHA)).exists()
    (tmp_path / "cache" / SHA).write_bytes(b"x" * len(DATA))
    assert _claim(tmp_path).answer == "taken"
    assert not (tmp_path / "cache" / SHA).exists()


def test_a_job_directory_open_to_others_stops_it_before_the_cache(tmp_path: Path) -> None:
    job = tmp_path / "open"
    job.mkdir()
    job.chmod(0o757)
    (tmp_path / "cache").mkdir(mode=0o700)
    (tmp_path / "cache" / SHA).write_bytes(DATA)
    with pytest.raises(site_fs.SiteCommandFailed, match="writable by other accounts"):
        _claim(tmp_path, job)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [SHA]
    assert not list(job.iterdir())
