"""gateway.services.images.layer_unpack on real tar layers: the image's changes are applied, and
no entry of a hostile layer reaches outside the root (this host's files stay as they are)."""

from __future__ import annotations

import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from gateway.services.images.layer_unpack import LayerError, apply_layer


def layer(tmp_path: Path, name: str, entries: list[tuple[str, str, object]]) -> Path:
    """A tar file of (name, kind, data): kind file (bytes), dir, symlink or hardlink (the
    target), or setuid (a file with mode 4755)."""
    path = tmp_path / name
    with tarfile.open(path, "w") as tar:
        for entry, kind, data in entries:
            info = tarfile.TarInfo(entry)
            if kind == "dir":
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            elif kind in ("symlink", "hardlink"):
                info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
                info.linkname = str(data)
                tar.addfile(info)
            else:
                assert isinstance(data, bytes)
                info.size, info.mode = len(data), 0o4755 if kind == "setuid" else 0o644
                tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "root").mkdir()
    return tmp_path / "root"


def test_an_absolute_symlink_is_the_images_root_not_the_hosts(root: Path,
                                                              tmp_path: Path) -> None:
    apply_layer(root, layer(tmp_path, "1", [("evil", "symlink", "/"),
                                            ("up", "symlink", "/../../..")]), 1 << 20)
    apply_layer(root, layer(tmp_path, "2", [("evil/etc/escaped", "file", b"inside\n"),
                                            ("up/tmp/escaped", "file", b"inside too\n")]),
                1 << 20)
    assert (root / "etc/escaped").read_text() == "inside\n"
    assert (root / "tmp/escaped").read_text() == "inside too\n"
    assert not Path("/etc/escaped").exists() and not Path("/tmp/escaped").exists()


def test_a_symlink_through_a_relative_link_stays_inside(root: Path, tmp_path: Path) -> None:
    apply_layer(root, layer(tmp_path, "1", [("a", "dir", None), ("a/b", "dir", None),
                                            ("a/b/up", "symlink", "../..")]), 1 << 20)
    apply_layer(root, layer(tmp_path, "2", [("a/b/up/x", "file", b"x")]), 1 << 20)
    assert (root / "x").read_bytes() == b"x"


@pytest.mark.parametrize(("entries", "message"), [
    ([("../outside", "file", b"x")], "climbs out"),
    ([("/etc/outside", "file", b"x")], "absolute path"),
    ([("a", "symlink", "../../etc")], "points above the root"),
    ([("h", "hardlink", "../../etc/passwd")], "climbs out"),
    ([("h", "hardlink", "/etc/passwd")], "absolute path"),
    ([("evil", "symlink", "/"), ("h", "hardlink", "evil/etc/hostname")], "cannot be unpacked"),
    ([("f", "file", b"x"), ("f/g", "file", b"y")], "not a directory"),
])
def test_hostile_entries_are_refused(root: Path, tmp_path: Path,
                                     entries: list[tuple[str, str, object]],
                                     message: str) -> None:
    with pytest.raises(LayerError, match=message):
        apply_layer(root, layer(tmp_path, "bad", entries), 1 << 20)
    assert not (tmp_path / "outside").exists()


def test_whiteouts_and_opaque_directories(root: Path, tmp_path: Path) -> None:
    apply_layer(root, layer(tmp_path, "1", [
        ("d", "dir", None), ("d/old", "file", b"old"), ("tree", "dir", None),
        ("tree/sub", "dir", None), ("tree/sub/f", "file", b"f"), ("keep", "file", b"k")]),
        1 << 20)
    # The opaque marker comes after this layer's own entry: that one stays.
    apply_layer(root, layer(tmp_path, "2", [
        ("d/new", "file", b"new"), ("d/.wh..wh..opq", "file", b""),
        (".wh.tree", "file", b""), (".wh.absent", "file", b"")]), 1 << 20)
    assert sorted(p.name for p in (root / "d").iterdir()) == ["new"]
    assert not (root / "tree").exists()
    assert (root / "keep").read_bytes() == b"k"


def test_a_later_layer_replaces_a_file_with_a_directory_and_back(root: Path,
                                                                 tmp_path: Path) -> None:
    apply_layer(root, layer(tmp_path, "1", [("p", "file", b"file")]), 1 << 20)
    apply_layer(root, layer(tmp_path, "2", [("p", "dir", None), ("p/q", "file", b"q")]),
                1 << 20)
    assert (root / "p/q").read_bytes() == b"q"
    apply_layer(root, layer(tmp_path, "3", [("p", "symlink", "elsewhere")]), 1 << 20)
    assert os.readlink(root / "p") == "elsewhere"


def test_set_id_bits_are_dropped_and_hard_links_kept(root: Path, tmp_path: Path) -> None:
    apply_layer(root, layer(tmp_path, "1", [("bin", "dir", None),
                                            ("bin/su", "setuid", b"#!/bin/sh\n"),
                                            ("bin/su2", "hardlink", "bin/su")]), 1 << 20)
    mode = os.stat(root / "bin/su").st_mode
    assert not mode & (stat.S_ISUID | stat.S_ISGID) and mode & 0o755 == 0o755
    assert os.stat(root / "bin/su").st_ino == os.stat(root / "bin/su2").st_ino


def test_the_unpacked_size_is_capped(root: Path, tmp_path: Path) -> None:
    with pytest.raises(LayerError, match="goes over registry_image_max_bytes"):
        apply_layer(root, layer(tmp_path, "big", [("a", "file", b"x" * 60),
                                                  ("b", "file", b"y" * 60)]), 100)


def test_the_number_of_entries_is_capped(root: Path, tmp_path: Path) -> None:
    entries: list[tuple[str, str, object]] = [(f"f{n}", "file", b"") for n in range(4)]
    assert apply_layer(root, layer(tmp_path, "four", entries), 100, max_entries=4) == 0
    with pytest.raises(LayerError, match="more than 3 entries"):
        apply_layer(root, layer(tmp_path, "four", entries), 100, max_entries=3)
