"""LIVE (this machine): the unpack command the gateway runs on a site for ch-run
(containers.image.tools.unpack_once_argv), with the real unsquashfs: it unpacks once,
leaves an existing directory alone, clears a half-unpacked left-over first, and gives the
tree the /ch/environment that the launch line's bare `ch-run --set-env` reads."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from containers.image.tools import unpack_once_argv
from tests.containers.conftest import need


@pytest.fixture
def squashfs(tmp_path: Path) -> Path:
    need("mksquashfs")
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "greeting").write_text("hi\n")
    (root / "ro").mkdir()
    (root / "ro" / "file").write_text("x")
    (root / "ro").chmod(0o555)
    out = tmp_path / "image.squashfs"
    subprocess.run(["mksquashfs", str(root), str(out), "-quiet", "-no-progress"], check=True)
    (root / "ro").chmod(0o755)
    return out


def unpack(squashfs: Path, dest: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(unpack_once_argv(str(squashfs), str(dest)), capture_output=True,
                          text=True, timeout=60, check=False)


def test_it_unpacks_once_and_leaves_an_existing_directory_alone(
        squashfs: Path, tmp_path: Path) -> None:
    need("unsquashfs")
    dest = tmp_path / "cache" / "abc.d"
    dest.parent.mkdir()
    assert unpack(squashfs, dest).returncode == 0
    assert (dest / "etc" / "greeting").read_text() == "hi\n"
    (dest / "etc" / "greeting").write_text("changed\n")
    assert unpack(squashfs, dest).returncode == 0
    assert (dest / "etc" / "greeting").read_text() == "changed\n"  # not unpacked again
    assert sorted(p.name for p in dest.parent.iterdir()) == ["abc.d"]


def test_a_half_unpacked_left_over_is_cleared_first(squashfs: Path, tmp_path: Path) -> None:
    need("unsquashfs")
    dest = tmp_path / "abc.d"
    partial = tmp_path / "abc.d.gw-partial"
    (partial / "ro").mkdir(parents=True)
    (partial / "ro" / "stale").write_text("old")
    (partial / "ro").chmod(0o555)  # as an image's read-only directory leaves it
    assert unpack(squashfs, dest).returncode == 0
    assert not partial.exists()
    assert (dest / "ro" / "file").read_text() == "x" and not (dest / "ro" / "stale").exists()


def test_a_damaged_file_leaves_no_directory(tmp_path: Path) -> None:
    need("unsquashfs")
    bad = tmp_path / "bad.squashfs"
    bad.write_bytes(b"not a squashfs" * 100)
    done = unpack(bad, tmp_path / "abc.d")
    assert done.returncode != 0
    assert not (tmp_path / "abc.d").exists()


def test_a_tree_without_ch_environment_gets_an_empty_one(squashfs: Path, tmp_path: Path) -> None:
    need("unsquashfs")
    dest = tmp_path / "abc.d"
    assert unpack(squashfs, dest).returncode == 0
    assert (dest / "ch" / "environment").read_text() == ""


def test_an_image_environment_is_kept_as_it_is(tmp_path: Path) -> None:
    need("mksquashfs")
    need("unsquashfs")
    root = tmp_path / "root"
    (root / "ch").mkdir(parents=True)
    (root / "ch" / "environment").write_text("GREETING=from the image\n")
    image = tmp_path / "image.squashfs"
    subprocess.run(["mksquashfs", str(root), str(image), "-quiet", "-no-progress"], check=True)
    dest = tmp_path / "abc.d"
    for _ in range(2):  # unpacked, then found
        assert unpack(image, dest).returncode == 0
        assert (dest / "ch" / "environment").read_text() == "GREETING=from the image\n"


def test_a_tree_unpacked_before_gets_the_file_when_found(squashfs: Path, tmp_path: Path) -> None:
    need("unsquashfs")
    dest = tmp_path / "abc.d"
    (dest / "etc").mkdir(parents=True)  # as an older gateway left it: no /ch
    assert unpack(squashfs, dest).returncode == 0
    assert (dest / "ch" / "environment").read_text() == ""


def test_nothing_is_written_through_an_image_symlink(tmp_path: Path) -> None:
    need("unsquashfs")
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "abc.d"
    dest.mkdir()
    (dest / "ch").symlink_to(outside)
    assert unpack(tmp_path / "unused.squashfs", dest).returncode == 0
    assert list(outside.iterdir()) == []


def test_mount_points_are_made_in_the_tree_never_through_a_symlink(
        squashfs: Path, tmp_path: Path) -> None:
    need("unsquashfs")
    dest = tmp_path / "abc.d"
    done = subprocess.run(unpack_once_argv(str(squashfs), str(dest), ["data"]),
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert (dest / "data").is_dir() and not (dest / "data").is_symlink()
    # A tree found (unpacked for another job) gets the ones it lacks; an image's own
    # entry by that name, a dangling symlink included, is left as it is.
    outside = tmp_path / "outside"
    (dest / "params").symlink_to(outside / "made")
    again = subprocess.run(unpack_once_argv(str(squashfs), str(dest), ["data", "ref", "params"]),
                           capture_output=True, text=True, timeout=60, check=False)
    assert again.returncode == 0, again.stderr
    assert (dest / "ref").is_dir() and not outside.exists()
    # Deeper ones name by name; a path through a symlink stops at it.
    (dest / "link").symlink_to(outside)
    deep = subprocess.run(unpack_once_argv(str(squashfs), str(dest),
                                           ["srv/shared/ada", "link/x/y", "data/in"]),
                          capture_output=True, text=True, timeout=60, check=False)
    assert deep.returncode == 0, deep.stderr
    assert (dest / "srv/shared/ada").is_dir() and (dest / "data/in").is_dir()
    assert not outside.exists()


@pytest.mark.parametrize("name", ["", "a//b", "..", "a/../b", ".", "/a", "a/", "x\x00"])
def test_a_mount_point_is_a_relative_path_of_names(name: str) -> None:
    with pytest.raises(ValueError, match="relative path of directory names"):
        unpack_once_argv("/image.squashfs", "/cache/abc.d", [name])


def test_paths_must_be_absolute() -> None:
    with pytest.raises(ValueError, match="absolute"):
        unpack_once_argv("image.squashfs", "/cache/abc.d")
