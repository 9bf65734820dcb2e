"""The site's per-entry staging lock, on this machine's file system (LocalTransport): two
stagers of one content send it once; a lock left by a dead process is broken once stale;
a live holder makes others wait, then give up transiently."""

from __future__ import annotations

import hashlib
import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from adapters.errors import SiteUnavailable
from adapters.transfer import StagedFile, stage
from adapters.transfer.site_lock import (
    TAKE_SCRIPT,
    hold,
    holder_is_dead,
    lock_name,
    own_holder,
)
from adapters.transfer.sources import LocalFile
from adapters.transport import LocalTransport

DATA = os.urandom(1 << 20)
SHA = hashlib.sha256(DATA).hexdigest()


class Counting(LocalTransport):
    """LocalTransport counting the bytes uploaded, a little slowly (so stagers overlap)."""

    def __init__(self) -> None:
        super().__init__()
        self.sent = 0
        self.guard = threading.Lock()

    def upload(self, source: Any, path: str, **kw: Any) -> int:
        time.sleep(0.3)
        sent = super().upload(source, path, **kw)
        with self.guard:
            self.sent += sent
        return sent


def test_concurrent_stagers_send_once(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.write_bytes(DATA)
    transport, cache = Counting(), str(tmp_path / "cache")
    results = []

    def one(n: int) -> None:
        results.append(stage(transport, LocalFile(src), StagedFile(SHA, len(DATA)),
                             str(tmp_path / f"job{n}" / "in"), cache_dir=cache))

    threads = [threading.Thread(target=one, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert transport.sent == len(DATA)
    assert sorted(r.cached for r in results) == [False, True, True]
    assert all((tmp_path / f"job{n}" / "in").read_bytes() == DATA for n in range(3))
    assert not Path(lock_name(cache, SHA)).exists()


def test_a_lock_being_released_is_held_not_a_failure(tmp_path: Path) -> None:
    # The holder's release removes `holder`, then the directory: between the two, another
    # stager finds the lock held by nobody named. CI saw `cat` fail there (exit 1).
    path = lock_name(str(tmp_path), SHA)
    os.mkdir(path)
    taken = subprocess.run(["sh", "-c", TAKE_SCRIPT, "gridgate-lock", path, "300", "me"],
                           capture_output=True, text=True, check=False)
    assert (taken.returncode, taken.stdout) == (0, "held\n")
    assert not (Path(path) / "holder").exists()


def test_a_stale_lock_is_broken(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    dead = Path(lock_name(str(cache), SHA))
    dead.mkdir()
    os.utime(dead, (time.time() - 1000, time.time() - 1000))
    with hold(LocalTransport(), str(cache), SHA, stale_after=300):
        assert dead.is_dir()
    assert not dead.exists()


def test_a_live_holder_makes_others_wait_then_retry_later(tmp_path: Path) -> None:
    cache = str(tmp_path)
    with hold(LocalTransport(), cache, SHA), pytest.raises(SiteUnavailable) as caught, \
            hold(LocalTransport(), cache, SHA, max_wait=0.3, poll=0.1):
        pass
    assert caught.value.transient
    assert "another gateway process" in caught.value.message


def test_the_holder_keeps_its_lock_fresh(tmp_path: Path) -> None:
    ticks = iter(range(0, 1000, 100))
    with hold(LocalTransport(), str(tmp_path), SHA, refresh=50,
              clock=lambda: float(next(ticks))) as lock:
        path = Path(lock.path)
        os.utime(path, (0, 0))
        lock.touch()
        assert path.stat().st_mtime > 1000


def _holder_of_process(argv: list[str]) -> tuple[subprocess.Popen[bytes], str]:
    """A process started here, and the holder string it would write into a lock."""
    proc = subprocess.Popen(argv)
    # Until waited for, even an ended child keeps its /proc entry (a zombie).
    started = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return proc, f"{boot}:{proc.pid}:{started}"


def _lock_held_by(cache: Path, holder: str) -> Path:
    lock = Path(lock_name(str(cache), SHA))
    lock.mkdir(parents=True)
    (lock / "holder").write_text(holder + "\n")
    return lock


def test_a_lock_whose_holder_died_here_is_broken_at_once(tmp_path: Path) -> None:
    proc, holder = _holder_of_process(["true"])
    proc.wait()
    lock = _lock_held_by(tmp_path, holder)
    # Fresh (not stale), yet taken at once: its holder ran on this machine and has ended.
    with hold(LocalTransport(), str(tmp_path), SHA, stale_after=300, max_wait=0.5, poll=0.1):
        assert (lock / "holder").read_text().strip() == own_holder() != holder
    assert not lock.exists()


def test_a_lock_whose_holder_runs_is_kept(tmp_path: Path) -> None:
    proc, holder = _holder_of_process(["sleep", "30"])
    try:
        lock = _lock_held_by(tmp_path, holder)
        assert not holder_is_dead(holder)
        with pytest.raises(SiteUnavailable), hold(LocalTransport(), str(tmp_path), SHA,
                                                  max_wait=0.3, poll=0.1):
            pass
        assert (lock / "holder").read_text().strip() == holder
    finally:
        proc.kill()
        proc.wait()
    assert holder_is_dead(holder)


@pytest.mark.parametrize("holder", [
    "0f0e0d0c-0000-4000-8000-000000000000:1:1",  # another machine (or boot): not judged here
    "unknown:1:1", "garbage", ""])
def test_a_holder_not_known_here_is_never_judged_dead(holder: str) -> None:
    assert not holder_is_dead(holder)
