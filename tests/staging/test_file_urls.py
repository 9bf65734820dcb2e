"""file:// URLs on the gateway's host: only the directories the admin declared for the
user, never through a symbolic link, only regular files, written whole and (as root)
owned by the directory's owner."""

from __future__ import annotations

import io
import os
import pwd
from pathlib import Path

import pytest

from gateway.services.data.file_urls import (
    FileRoots,
    FileUrlRefused,
    list_files,
    open_file,
    write_file,
)


def read_file(roots: FileRoots, url: str) -> bytes:
    with open_file(roots, url) as file:
        return file.read()


@pytest.fixture
def roots(tmp_path: Path) -> FileRoots:
    for name in ("users/alice", "users/bob", "projects/astro", "shared"):
        (tmp_path / name).mkdir(parents=True)
    templates = f"{tmp_path}/users/{{user}}, {tmp_path}/projects/{{project}},{tmp_path}/shared"
    return FileRoots.of(templates, "alice", ["astro", "missing"])


def test_templates_give_a_user_their_directories(tmp_path: Path, roots: FileRoots) -> None:
    assert roots.dirs == (tmp_path / "users/alice", tmp_path / "projects/astro",
                          tmp_path / "shared")
    for name in ("..", "a/b", ".hidden", "x\n"):
        assert FileRoots.of(f"{tmp_path}/users/{{user}}", name, [name]).dirs == ()
    assert FileRoots.of("", "alice", []).dirs == ()


def test_urls_outside_are_refused(tmp_path: Path, roots: FileRoots) -> None:
    (tmp_path / "users/bob/secret").write_text("bob's")
    for url in (f"file://{tmp_path}/users/bob/secret", "file:///etc/passwd",
                f"file://{tmp_path}/users/alice", f"file://{tmp_path}/users/alice/../bob/x",
                f"file://{tmp_path}/users/alicex/y"):
        with pytest.raises(FileUrlRefused):
            read_file(roots, url)
    with pytest.raises(FileUrlRefused, match="declared none"):
        FileRoots(()).locate("file:///srv/x")


def test_links_never_lead_out(tmp_path: Path, roots: FileRoots) -> None:
    home = tmp_path / "users/alice"
    (tmp_path / "users/bob/secret").write_text("bob's")
    (home / "to-bob").symlink_to(tmp_path / "users/bob")
    (home / "passwd").symlink_to("/etc/passwd")
    for url in (f"file://{home}/to-bob/secret", f"file://{home}/passwd"):
        with pytest.raises(FileUrlRefused):
            read_file(roots, url)
    with pytest.raises(FileUrlRefused):
        write_file(roots, f"file://{home}/to-bob/planted", io.BytesIO(b"x"))
    assert not (tmp_path / "users/bob/planted").exists()
    # Writing onto a link replaces the link, never the file it points to.
    write_file(roots, f"file://{home}/passwd", io.BytesIO(b"mine"))
    assert (home / "passwd").read_bytes() == b"mine" and not (home / "passwd").is_symlink()


def test_only_regular_files_are_read(tmp_path: Path, roots: FileRoots) -> None:
    home = tmp_path / "users/alice"
    os.mkfifo(home / "fifo")  # opening it must not wait for a writer
    with pytest.raises(FileUrlRefused, match="not a regular file"):
        read_file(roots, f"file://{home}/fifo")
    (home / "big").write_bytes(b"x" * 11)
    assert read_file(roots, f"file://{home}/big") == b"x" * 11


def test_directories_list_their_regular_files(tmp_path: Path, roots: FileRoots) -> None:
    refs = tmp_path / "projects/astro/refs"
    (refs / "sub").mkdir(parents=True)
    (refs / "a.fa").write_text("a")
    (refs / "sub/b.fa").write_text("b")
    (refs / "out").symlink_to("/etc")
    assert list_files(roots, f"file://{refs}", 10) == ["a.fa", "sub/b.fa"]
    with pytest.raises(FileUrlRefused, match="more than 1"):
        list_files(roots, f"file://{refs}", 1)


def test_files_are_written_whole_and_owned_as_the_directory(tmp_path: Path,
                                                             roots: FileRoots) -> None:
    home = tmp_path / "users/alice"
    nobody = pwd.getpwnam("nobody")
    if os.geteuid() == 0:
        os.chown(home, nobody.pw_uid, nobody.pw_gid)
    assert write_file(roots, f"file://{home}/run/1/out.txt", io.BytesIO(b"result")) == 6
    written = home / "run/1/out.txt"
    assert written.read_bytes() == b"result"
    assert sorted(p.name for p in written.parent.iterdir()) == ["out.txt"]  # no partial left
    if os.geteuid() == 0:
        assert {p.stat().st_uid for p in (home / "run", home / "run/1", written)} == {
            nobody.pw_uid}

    class Broken(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            raise OSError("the store's disk failed")

    with pytest.raises(OSError):
        write_file(roots, f"file://{home}/run/1/out.txt", Broken())
    assert written.read_bytes() == b"result"
    assert sorted(p.name for p in written.parent.iterdir()) == ["out.txt"]
