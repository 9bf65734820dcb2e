"""Staging over LocalTransport: real files, real coreutils (sha256sum, mv, ln) on this box."""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import stat
from pathlib import Path

import pytest

from adapters.transfer import StagingFailed, copy_site_to_site, site_fs, stage_file
from adapters.transfer.site_fs import partial_name
from adapters.transport import (
    ConnectionFailed,
    FileTransferError,
    LocalSource,
    LocalTransport,
    Progress,
)

SIZE = 3 * (1 << 20) + 12345


@pytest.fixture
def content(tmp_path: Path) -> tuple[Path, str]:
    path = tmp_path / "src.bin"
    path.write_bytes(os.urandom(SIZE))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


class DroppingTransport(LocalTransport):
    """Its first upload writes `cut` bytes, then fails as a dropped connection would."""

    def __init__(self, cut: int) -> None:
        super().__init__()
        self.cut = cut
        self.drops = 0

    def upload(self, source: LocalSource, path: str, *, offset: int = 0,
               length: int | None = None, mode: int = 0o600,
               progress: Progress | None = None) -> int:
        if self.drops:
            return super().upload(source, path, offset=offset, length=length, mode=mode,
                                  progress=progress)
        self.drops += 1
        super().upload(source, path, offset=offset, length=self.cut, mode=mode,
                       progress=progress)
        raise ConnectionFailed("connection lost (test)")


class CorruptingTransport(LocalTransport):
    """Flips a byte of the file after each of its first `times` uploads (before verify);
    records whether the final name existed whenever the site's hasher ran."""

    def __init__(self, times: int, final: Path) -> None:
        super().__init__()
        self.times, self.final = times, final
        self.final_seen_before_verify: list[bool] = []

    def upload(self, source: LocalSource, path: str, *, offset: int = 0,
               length: int | None = None, mode: int = 0o600,
               progress: Progress | None = None) -> int:
        written = super().upload(source, path, offset=offset, length=length, mode=mode,
                                 progress=progress)
        if self.times:
            self.times -= 1
            with open(path, "r+b") as f:
                f.seek(1000)
                byte = f.read(1)
                f.seek(1000)
                f.write(bytes([byte[0] ^ 0xFF]))
        return written

    def run(self, argv, *, stdin=None, timeout=60.0):  # type: ignore[no-untyped-def]
        if "gridgate-verify" in argv:
            self.final_seen_before_verify.append(self.final.exists())
        return super().run(argv, stdin=stdin, timeout=timeout)


def test_stage_places_verified_file_in_private_dirs(tmp_path: Path,
                                                    content: tuple[Path, str]) -> None:
    src, digest = content
    dest = tmp_path / "site" / "job-1" / "in" / "data.bin"
    seen: list[int] = []
    result = stage_file(LocalTransport(), str(src), digest, SIZE, str(dest), progress=seen.append)
    assert dest.read_bytes() == src.read_bytes()
    assert (result.bytes_sent, result.cached, result.resumes, result.resends) == (SIZE, False, 0, 0)
    assert seen[-1] == SIZE
    for directory in (dest.parent, dest.parent.parent, dest.parent.parent.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(dest.stat().st_mode) == 0o600
    assert sorted(p.name for p in dest.parent.iterdir()) == ["data.bin"]


def test_stage_resumes_a_partial_file(tmp_path: Path, content: tuple[Path, str]) -> None:
    src, digest = content
    dest = tmp_path / "d" / "data.bin"
    dest.parent.mkdir()
    have = SIZE // 3
    Path(partial_name(str(dest))).write_bytes(src.read_bytes()[:have])
    result = stage_file(LocalTransport(), str(src), digest, SIZE, str(dest))
    assert result.bytes_sent == SIZE - have
    assert dest.read_bytes() == src.read_bytes()


def test_dropped_connection_resumes_from_what_arrived(tmp_path: Path,
                                                      content: tuple[Path, str]) -> None:
    src, digest = content
    dest = tmp_path / "d" / "data.bin"
    transport = DroppingTransport(cut=SIZE // 2)
    result = stage_file(transport, str(src), digest, SIZE, str(dest))
    assert dest.read_bytes() == src.read_bytes()
    assert result.resumes == 1
    assert result.bytes_sent == SIZE  # half, then the other half: nothing twice


def test_corruption_is_detected_and_resent_never_shown_under_final_name(
        tmp_path: Path, content: tuple[Path, str]) -> None:
    src, digest = content
    dest = tmp_path / "d" / "data.bin"
    transport = CorruptingTransport(times=1, final=dest)
    result = stage_file(transport, str(src), digest, SIZE, str(dest))
    assert dest.read_bytes() == src.read_bytes()
    assert result.resends == 1
    assert result.bytes_sent == 2 * SIZE
    assert transport.final_seen_before_verify == [False, False]


def test_persistent_corruption_fails_and_leaves_nothing(tmp_path: Path,
                                                        content: tuple[Path, str]) -> None:
    src, digest = content
    dest = tmp_path / "d" / "data.bin"
    transport = CorruptingTransport(times=10, final=dest)
    with pytest.raises(StagingFailed, match="sha256"):
        stage_file(transport, str(src), digest, SIZE, str(dest), max_resends=2)
    assert list(dest.parent.iterdir()) == []


def test_wrong_size_partial_longer_than_file_is_restarted(tmp_path: Path,
                                                          content: tuple[Path, str]) -> None:
    src, digest = content
    dest = tmp_path / "d" / "data.bin"
    dest.parent.mkdir()
    Path(partial_name(str(dest))).write_bytes(b"x" * (SIZE + 10))
    result = stage_file(LocalTransport(), str(src), digest, SIZE, str(dest))
    assert result.bytes_sent == SIZE
    assert dest.read_bytes() == src.read_bytes()


def test_cache_hit_sends_nothing_and_links(tmp_path: Path, content: tuple[Path, str]) -> None:
    src, digest = content
    cache = tmp_path / "scratch" / ".gridgate-cache"
    first = tmp_path / "scratch" / "job-1" / "a.bin"
    second = tmp_path / "scratch" / "job-2" / "b.bin"
    one = stage_file(LocalTransport(), str(src), digest, SIZE, str(first), str(cache))
    two = stage_file(LocalTransport(), str(src), digest, SIZE, str(second), str(cache))
    assert (one.bytes_sent, one.cached) == (SIZE, False)
    assert (two.bytes_sent, two.cached) == (0, True)
    assert second.read_bytes() == src.read_bytes()
    assert second.stat().st_ino == (cache / digest).stat().st_ino
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700


def test_staging_again_after_an_interrupted_cache_hit_succeeds(
        tmp_path: Path, content: tuple[Path, str]) -> None:
    # A gateway killed after the cached copy was linked into place and before it recorded
    # so stages the same file again: the destination is already a link to the entry.
    src, digest = content
    cache = tmp_path / "scratch" / ".gridgate-cache"
    dest = tmp_path / "scratch" / "job" / "in.bin"
    stage_file(LocalTransport(), str(src), digest, SIZE, str(dest), str(cache))
    os.link(cache / digest, partial_name(str(dest)))  # left by the interrupted attempt too
    again = stage_file(LocalTransport(), str(src), digest, SIZE, str(dest), str(cache))
    assert (again.bytes_sent, again.cached) == (0, True)
    assert dest.stat().st_ino == (cache / digest).stat().st_ino
    assert hashlib.sha256(dest.read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in dest.parent.iterdir()) == ["in.bin"]


def test_a_cache_entry_changed_in_place_is_dropped_and_resent(
        tmp_path: Path, content: tuple[Path, str]) -> None:
    src, digest = content
    cache = tmp_path / ".cache"
    first = tmp_path / "job-1" / "a.bin"
    stage_file(LocalTransport(), str(src), digest, SIZE, str(first), str(cache))
    with open(first, "r+b") as f:  # the job writes into its (hard-linked) input
        f.write(b"changed")
    again = stage_file(LocalTransport(), str(src), digest, SIZE,
                       str(tmp_path / "job-2" / "a.bin"), str(cache))
    assert (again.bytes_sent, again.cached) == (SIZE, False)
    assert (cache / digest).read_bytes() == src.read_bytes()


def test_site_to_site_copy_streams_and_verifies(tmp_path: Path,
                                                content: tuple[Path, str]) -> None:
    src, _digest = content
    dest = tmp_path / "other-site" / "job" / "in.bin"
    result = copy_site_to_site(LocalTransport(), str(src), LocalTransport(), str(dest))
    assert dest.read_bytes() == src.read_bytes()
    assert result.bytes_sent == SIZE


def test_site_to_site_copy_resumes_after_a_drop(tmp_path: Path,
                                                content: tuple[Path, str]) -> None:
    src, digest = content
    dest = tmp_path / "other" / "in.bin"
    result = copy_site_to_site(LocalTransport(), str(src), DroppingTransport(SIZE // 4),
                               str(dest), sha256=digest, size=SIZE)
    assert dest.read_bytes() == src.read_bytes()
    assert (result.resumes, result.bytes_sent) == (1, SIZE)


def test_site_to_site_copy_of_a_missing_file_fails(tmp_path: Path) -> None:
    with pytest.raises(StagingFailed, match="does not exist"):
        copy_site_to_site(LocalTransport(), str(tmp_path / "nope"), LocalTransport(),
                          str(tmp_path / "x" / "y"))


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="sha256"):
        stage_file(LocalTransport(), "x", "abc", 1, str(tmp_path / "y"))
    with pytest.raises(ValueError, match="absolute"):
        stage_file(LocalTransport(), "x", "0" * 64, 1, "relative/y")


# --- LocalTransport upload/download ---------------------------------------------------


def test_local_upload_offset_cuts_stale_tail_and_download_ranges(tmp_path: Path) -> None:
    t = LocalTransport()
    path = str(tmp_path / "f")
    assert t.upload(io.BytesIO(b"hello world, long tail"), path, mode=0o640) == 22
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640
    assert t.upload(io.BytesIO(b"WORLD"), path, offset=6) == 5
    assert Path(path).read_bytes() == b"hello WORLD"
    sink = io.BytesIO()
    assert t.download(path, sink, offset=6, length=3) == 3
    assert sink.getvalue() == b"WOR"
    out = tmp_path / "out"
    out.write_bytes(b"abcdefghijklmnop")
    assert t.download(path, str(out), offset=2) == 9
    assert out.read_bytes() == b"abllo WORLD"
    with pytest.raises(FileTransferError):
        t.download(str(tmp_path / "missing"), io.BytesIO())
    with pytest.raises(FileTransferError):
        t.upload(io.BytesIO(b"x"), str(tmp_path / "missing"), offset=3)


def test_site_hash_uses_openssl_or_sha256sum_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    content: tuple[Path, str]) -> None:
    """The hasher gives the same digest through OpenSSL and, where the site has none,
    through coreutils' sha256sum (PATH without openssl)."""
    src, digest = content
    assert site_fs.sha256_of(LocalTransport(), str(src)) == digest
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "sha256sum"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or tool)
    monkeypatch.setenv("PATH", str(bin_dir))
    assert site_fs.sha256_of(LocalTransport(), str(src)) == digest
    with pytest.raises(ValueError, match="absolute"):
        site_fs.sha256_of(LocalTransport(), "relative/path")


def test_directories_of_other_accounts_or_open_to_them_are_refused(
        tmp_path: Path, content: tuple[Path, str]) -> None:
    """On a shared scratch another account could create the (predictable) cache or job
    directory first: staging into it would hand it the data. Refused, file untouched."""
    src, digest = content
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, 65534, 65534)  # nobody's
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "elsewhere")
    (tmp_path / "elsewhere").mkdir(mode=0o700)
    cases = {theirs: "belongs to uid 65534, not to this account",
             open_dir: "writable by other accounts (mode 777)",
             link: "is a symbolic link, not a directory"}
    for directory, message in cases.items():
        with pytest.raises(site_fs.SiteCommandFailed, match=re.escape(message)):
            stage_file(LocalTransport(), str(src), digest, SIZE,
                       str(tmp_path / "job" / "data.bin"), cache_dir=str(directory))
        with pytest.raises(site_fs.SiteCommandFailed, match=re.escape(message)):
            stage_file(LocalTransport(), str(src), digest, SIZE, str(directory / "data.bin"))
        assert not (directory / "data.bin").exists()
        assert not list(directory.iterdir())


class CountingCommands(LocalTransport):
    """LocalTransport recording the name of each site command ($0 of a script)."""

    def __init__(self) -> None:
        super().__init__()
        self.commands: list[str] = []

    def run(self, argv, *, stdin=None, timeout=60.0):  # type: ignore[no-untyped-def]
        self.commands.append(argv[3] if argv[:2] == ["sh", "-c"] else argv[0])
        return super().run(argv, stdin=stdin, timeout=timeout)


def test_a_staging_costs_few_site_commands(tmp_path: Path, content: tuple[Path, str]) -> None:
    """Round trips are most of a staging's time besides the bytes: a first staging into a
    cache takes two commands (directories, cache check, lock and sizes in one; then one
    that verifies, renames, unlocks and links); a cache hit one; no cache three."""
    src, digest = content
    cache = str(tmp_path / "cache")
    first, hit, plain = CountingCommands(), CountingCommands(), CountingCommands()
    stage_file(first, str(src), digest, SIZE, str(tmp_path / "j1" / "a"), cache)
    stage_file(hit, str(src), digest, SIZE, str(tmp_path / "j2" / "a"), cache)
    stage_file(plain, str(src), digest, SIZE, str(tmp_path / "j3" / "a"))
    assert first.commands == ["gridgate-claim", "gridgate-verify"]
    assert hit.commands == ["gridgate-claim"]
    assert plain.commands == ["gridgate-mkdir", "gridgate-sizes", "gridgate-verify"]
    for job in ("j1", "j2", "j3"):
        assert (tmp_path / job / "a").read_bytes() == src.read_bytes()
    assert sorted(p.name for p in Path(cache).iterdir()) == [digest]  # no lock left


def test_verify_and_place_checks_before_it_moves_anything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through coreutils' sha256sum (no openssl on PATH, which escapes odd names with a
    leading backslash) and with names a shell would act on: a short file is reported and
    kept, a wrong one deleted and nothing renamed, unlocked or linked; a right one is."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sh", "stat", "sha256sum", "mv", "ln", "cp", "rm", "rmdir"):
        (bin_dir / tool).symlink_to(shutil.which(tool) or tool)
    monkeypatch.setenv("PATH", str(bin_dir))
    site = tmp_path / "site"
    site.mkdir()
    data = os.urandom(5000)
    digest = hashlib.sha256(data).hexdigest()
    odd = "a\\b\n$(touch x) *"
    src, final, lock, link = (site / f"{odd}.part", site / f"{odd}.final", site / "lock",
                              site / f"{odd}.link")
    lock.mkdir()
    t = LocalTransport()

    def verify() -> site_fs.Verified:
        return site_fs.verify_and_place(t, str(src), len(data), digest, rename_to=str(final),
                                        unlock=str(lock), link_to=str(link))

    assert verify() == site_fs.Verified("missing")
    src.write_bytes(data[:100])
    assert verify() == site_fs.Verified("size", size=100)
    src.write_bytes(b"x" * len(data))
    wrong = hashlib.sha256(b"x" * len(data)).hexdigest()
    assert verify() == site_fs.Verified("mismatch", digest=wrong)
    assert sorted(p.name for p in site.iterdir()) == ["lock"]
    src.write_bytes(data)
    assert verify() == site_fs.Verified("placed")
    assert sorted(p.name for p in site.iterdir()) == sorted([final.name, link.name])
    assert final.read_bytes() == data
    assert final.stat().st_ino == link.stat().st_ino
