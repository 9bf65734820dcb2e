"""Verification on arrival (adapters.transfer.follow) over LocalTransport, with the size
threshold lowered: the follower places the file itself, falls back to a verify command when
it cannot follow, waits out a dropped upload, and never places under a lock not its own."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from adapters.transfer import StagedFile, follow, site_fs, stage, staging
from adapters.transfer.site_lock import lock_name
from adapters.transfer.sources import LocalFile
from adapters.transport import ConnectionFailed, LocalSource, LocalTransport, Progress

DATA = os.urandom(3 << 20)
SHA = hashlib.sha256(DATA).hexdigest()


@pytest.fixture(autouse=True)
def follow_small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(staging, "FOLLOW_MIN_BYTES", 1)
    monkeypatch.setattr(follow, "STALL_SECONDS", 0.5)


class Recording(LocalTransport):
    """Records each site command's name and answer; its first upload can stop at `cut`
    bytes and fail as a dropped connection would."""

    def __init__(self, cut: int | None = None) -> None:
        super().__init__()
        self.cut = cut
        self.answers: list[tuple[str, str]] = []

    def run(self, argv, *, stdin=None, timeout=60.0):  # type: ignore[no-untyped-def]
        result = super().run(argv, stdin=stdin, timeout=timeout)
        self.answers.append((argv[3], result.stdout.decode().strip()))
        return result

    def upload(self, source: LocalSource, path: str, *, offset: int = 0,
               length: int | None = None, mode: int = 0o600,
               progress: Progress | None = None) -> int:
        if self.cut is None:
            return super().upload(source, path, offset=offset, length=length, mode=mode,
                                  progress=progress)
        super().upload(source, path, offset=offset, length=self.cut - offset, mode=mode)
        self.cut = None
        raise ConnectionFailed("connection lost (test)")


def _stage(tmp_path: Path, transport: Recording) -> staging.StageResult:
    src = tmp_path / "src.bin"
    src.write_bytes(DATA)
    return stage(transport, LocalFile(src), StagedFile(SHA, len(DATA)),
                 str(tmp_path / "job" / "in"), cache_dir=str(tmp_path / "cache"))


def test_a_file_verified_on_arrival_needs_no_command_after_the_upload(tmp_path: Path) -> None:
    t = Recording()
    assert not _stage(tmp_path, t).cached
    assert t.answers == [("gridgate-claim", t.answers[0][1]), ("gridgate-follow", "placed")]
    assert (tmp_path / "job" / "in").read_bytes() == DATA
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [SHA]  # no lock left


def test_without_python3_the_file_is_verified_after_the_upload(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "stat", "mkdir", "id", "date", "cat", "rm", "rmdir", "mv", "ln",
                 "openssl", "nice"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or tool)
    monkeypatch.setenv("PATH", str(bin_dir))
    t = Recording()
    _stage(tmp_path, t)
    assert [name for name, _ in t.answers] == ["gridgate-claim", "gridgate-follow",
                                               "gridgate-verify"]
    assert t.answers[1][1] == "unavailable" and t.answers[2][1] == "placed"
    assert (tmp_path / "job" / "in").read_bytes() == DATA


def test_a_dropped_upload_is_waited_out_then_resumed_and_verified(tmp_path: Path) -> None:
    t = Recording(cut=len(DATA) // 2)
    result = _stage(tmp_path, t)
    assert result.resumes == 1 and result.bytes_sent == len(DATA) - len(DATA) // 2
    follows = [answer for name, answer in t.answers if name == "gridgate-follow"]
    assert follows[0].startswith("stalled") and follows[1] == "placed"
    assert (tmp_path / "job" / "in").read_bytes() == DATA


def test_it_never_places_under_a_lock_another_process_took_over(tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir(mode=0o700)
    partial = site_fs.partial_name(str(tmp_path / "cache" / SHA))
    Path(partial).write_bytes(DATA)
    lock = Path(lock_name(str(tmp_path / "cache"), SHA))
    lock.mkdir()
    (lock / "holder").write_text("another process\n")
    place = follow.Follower.place(rename_to=str(tmp_path / "cache" / SHA),
                                  unlock=str(lock), link_to=None)
    follower = follow.Follower(LocalTransport(), partial, StagedFile(SHA, len(DATA)), 0,
                               place)
    assert follower.result() is None
    assert Path(partial).read_bytes() == DATA and (lock / "holder").exists()


@pytest.mark.parametrize("session_gone", [False, True])
def test_a_reader_whose_ssh_session_is_gone_stops(tmp_path: Path, session_gone: bool) -> None:
    # A dropped connection closes the session's stderr: the site's reader (an orphan now)
    # must stop rather than hash on and place the file the resumed upload is sending.
    path = tmp_path / "partial"
    reader = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", follow._FOLLOW_PY, str(path), str(len(DATA)), "0",
         "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.3)  # it waits for the file to appear
    assert reader.stderr is not None
    if session_gone:
        reader.stderr.close()
    path.write_bytes(DATA)
    out, _ = reader.communicate(timeout=10)
    assert out.decode().split()[:1] == ([] if session_gone else [SHA])
