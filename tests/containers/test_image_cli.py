"""`gridgate image build|inspect|verify|extract` with the real squashfs-tools and siftool:
siftool accepts what we build, our reader agrees with siftool, inspect names the MPI of the
libraries inside, and a flipped byte fails the digest."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from containers.errors import DigestMismatch
from containers.image.digest import sha256_of, verify_sha256
from containers.image.sif import DataType, read_sif
from gateway.cli.images.sif_build import inside
from tests.containers.conftest import build, gridgate, gridgate_ok, make_rootfs, need


def siftool(*args: str) -> str:
    return subprocess.run([need("siftool"), *args], capture_output=True, text=True,
                          check=True).stdout


def unsquashfs_cat(image: Path, offset: int, path: str) -> str:
    return subprocess.run([need("unsquashfs"), "-cat", "-o", str(offset), str(image), path],
                          capture_output=True, text=True, check=True).stdout


def with_libraries(rootfs: Path, dest: Path, names: dict[str, str | None]) -> Path:
    """A copy of `rootfs` with empty library files (name -> None) and symlinks (name ->
    target): what an MPI install leaves, for the detection to read."""
    shutil.copytree(rootfs, dest, symlinks=True)
    for path, target in names.items():
        where = dest / path.lstrip("/")
        where.parent.mkdir(parents=True, exist_ok=True)
        if target is None:
            where.write_bytes(b"\x7fELF")
        else:
            where.symlink_to(target)
    return dest


def test_siftool_lists_the_primary_squashfs_partition_of_a_built_image(base_sif: Path) -> None:
    listing = siftool("list", str(base_sif))
    assert re.search(r"\|1\s+\|NONE\s+\|\d+-\d+\s+\|FS \(Squashfs/\*System/amd64\)", listing), \
        listing
    header = siftool("header", str(base_sif))
    assert re.search(r"Primary Architecture:\s+amd64", header), header


def test_the_sif_reader_agrees_with_siftool(base_sif: Path) -> None:
    with base_sif.open("rb") as stream:
        image = read_sif(stream)
    header = siftool("header", str(base_sif))
    assert f"ID:                   {image.header.id}" in header
    assert re.search(rf"Descriptors Total:\s+{image.header.descriptors_total}\b", header)
    assert re.search(rf"Descriptors Free:\s+{image.header.descriptors_free}\b", header)
    assert re.search(rf"Descriptors Offset:\s+{image.header.descriptors_offset}\b", header)
    primary = image.primary_partition()
    info = siftool("info", str(primary.id), str(base_sif))
    assert re.search(rf"Offset:\s+{primary.offset}\n", info), info
    assert re.search(rf"Size:\s+{primary.size}\n", info), info
    assert re.search(r"Partition Type:\s+\*System", info) and "Squashfs" in info
    # The partition is the SquashFS file system itself: unsquashfs reads it at that offset.
    assert unsquashfs_cat(base_sif, primary.offset, "etc/passwd") == ""


def test_image_inspect_prints_partitions_mpi_and_digest(rootfs: Path, tmp_path: Path) -> None:
    lib = "/usr/lib/x86_64-linux-gnu"
    tree = with_libraries(rootfs, tmp_path / "ompi", {
        f"{lib}/libmpi.so.40.30.2": None, f"{lib}/libmpi.so.40": "libmpi.so.40.30.2",
        f"{lib}/libopen-pal.so.40.30.2": None})
    image = tmp_path / "ompi.sif"
    built = build(tree, image)
    digest = "sha256:" + hashlib.sha256(image.read_bytes()).hexdigest()
    assert built["digest"] == digest
    text = gridgate_ok("image", "inspect", str(image)).stdout
    assert re.search(rf"^Digest\s+{digest}$", text, re.M), text
    assert "Open MPI ABI (libmpi.so.40: Open MPI 3.0 to 5.0); library 40.30.2; Open MPI 4.1.x" \
        in text
    assert re.search(r"^1\s+FS\s+1\s+-\s+\d+\s+\d+\s+Squashfs/\*System/amd64 \(primary\)\s*$",
                     text, re.M), text
    info = json.loads(gridgate_ok("image", "inspect", str(image), "--json").stdout)
    assert info["digest"] == digest and info["size"] == image.stat().st_size
    assert info["mpi"]["family"] == "openmpi" and info["mpi"]["release"] == "4.1"
    assert f"{lib}/libmpi.so.40.30.2" in info["mpi"]["libraries"]
    [fs] = [o for o in info["objects"] if o["type"] == "FS"]
    assert fs["partition"] == {"fs": "Squashfs", "type": "*System", "arch": "amd64",
                               "primary": True}
    assert info["primary_partition"]["squashfs_magic"] is True


def test_image_inspect_names_the_mpich_abi(rootfs: Path, tmp_path: Path) -> None:
    lib = "/usr/lib/x86_64-linux-gnu"
    tree = with_libraries(rootfs, tmp_path / "mpich", {
        f"{lib}/libmpich.so.12.2.2": None, f"{lib}/libmpich.so.12": "libmpich.so.12.2.2",
        "/usr/local/lib/libmpi.so.12": None})
    image = tmp_path / "mpich.sif"
    build(tree, image)
    info = json.loads(gridgate_ok("image", "inspect", str(image), "--json").stdout)
    assert info["mpi"]["family"] == "mpich" and info["mpi"]["version"] == "12.2.2"
    assert info["mpi"]["abi"].startswith("MPICH ABI (libmpi.so.12")
    assert "MPICH ABI" in gridgate_ok("image", "inspect", str(image)).stdout


def test_image_inspect_without_mpi(base_sif: Path) -> None:
    text = gridgate_ok("image", "inspect", str(base_sif)).stdout
    assert re.search(r"^MPI\s+none \(no libmpi", text, re.M), text
    assert re.search(r"^Environment\s+-$", text, re.M)


def test_image_build_from_a_definition_adds_files_and_environment(
        base_sif: Path, tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "hello.txt").write_text("hello from the image\n")
    (tmp_path / "app" / "data").mkdir()
    (tmp_path / "app" / "data" / "x.dat").write_text("x\n")
    definition = tmp_path / "app.yaml"
    definition.write_text(
        f"from: {base_sif}\n"
        "files:\n  app/hello.txt: /opt/app/hello.txt\n  app/data: /opt/app/data\n"
        "environment:\n  GREETING: \"it's $HOME\"\n  OMP_NUM_THREADS: 4\n")
    image = tmp_path / "app.sif"
    built = build(definition, image)
    assert built["environment"] == {"GREETING": "it's $HOME", "OMP_NUM_THREADS": "4"}
    listing = siftool("list", str(image))
    assert "Def.FILE" in listing and "Env.Vars" in listing and "FS (Squashfs/*System/amd64)" \
        in listing
    with image.open("rb") as stream:
        sif = read_sif(stream)
    offset = sif.primary_partition().offset
    [env_id] = [d.id for d in sif.objects(DataType.ENV_VARS)]
    assert json.loads(siftool("dump", str(env_id), str(image))) == built["environment"]
    script = unsquashfs_cat(image, offset, ".singularity.d/env/90-environment.sh")
    assert "export GREETING='it'\"'\"'s $HOME'\nexport OMP_NUM_THREADS=4\n" in script
    assert unsquashfs_cat(image, offset, "ch/environment") == (
        "GREETING=it's $HOME\nOMP_NUM_THREADS=4\n")
    assert unsquashfs_cat(image, offset, "opt/app/hello.txt") == "hello from the image\n"
    assert unsquashfs_cat(image, offset, "opt/app/data/x.dat") == "x\n"
    info = json.loads(gridgate_ok("image", "inspect", str(image), "--json").stdout)
    assert info["definition"] == definition.read_text()
    assert info["environment"] == built["environment"]
    # A definition on top of this image keeps its environment and overrides what it names.
    again = tmp_path / "again.yaml"
    again.write_text("from: app.sif\nenvironment:\n  OMP_NUM_THREADS: 8\n")
    rebuilt = build(again, tmp_path / "again.sif")
    assert rebuilt["environment"] == {"GREETING": "it's $HOME", "OMP_NUM_THREADS": "8"}
    assert unsquashfs_cat(tmp_path / "again.sif", offset, "ch/environment") == (
        "GREETING=it's $HOME\nOMP_NUM_THREADS=8\n")


def test_image_verify_detects_a_flipped_byte_in_the_partition(
        base_sif: Path, tmp_path: Path) -> None:
    with base_sif.open("rb") as stream:
        digest = sha256_of(stream)
        primary = read_sif(stream).primary_partition()
    assert gridgate_ok("image", "verify", str(base_sif), f"sha256:{digest}").stdout == (
        f"{base_sif}: sha256:{digest} OK\n")
    damaged = tmp_path / "damaged.sif"
    raw = bytearray(base_sif.read_bytes())
    raw[primary.offset + primary.size // 2] ^= 0x01
    damaged.write_bytes(bytes(raw))
    with damaged.open("rb") as stream:
        read_sif(stream)  # the structure is intact: only the digest tells
        with pytest.raises(DigestMismatch) as info:
            verify_sha256(stream, digest)
    assert info.value.expected == digest and info.value.actual != digest
    result = gridgate("image", "verify", str(damaged), digest)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: The image's digest is sha256:{info.value.actual}, "
                                    f"not the expected sha256:{digest}: it is damaged")


def test_image_build_errors_are_plain(rootfs: Path, base_sif: Path, tmp_path: Path) -> None:
    missing = gridgate("image", "build", str(tmp_path / "nope"), "-o", str(tmp_path / "x.sif"))
    assert missing.exit_code == 1 and "no such directory (a root file system) or definition" \
        in missing.stderr
    exists = gridgate("image", "build", str(rootfs), "-o", str(base_sif))
    assert exists.exit_code == 1 and "exists; --force replaces it" in exists.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("from: rootfs\nfiles:\n  a: relative/dest\n")
    result = gridgate("image", "build", str(bad), "-o", str(tmp_path / "bad.sif"))
    assert result.exit_code == 1 and "must be an absolute path inside the image" in result.stderr
    bad.write_text(f"from: {rootfs}\nfiles:\n  nothere.txt: /opt/x\n")
    result = gridgate("image", "build", str(bad), "-o", str(tmp_path / "bad.sif"))
    assert result.exit_code == 1 and "nothere.txt: no such file or directory" in result.stderr
    inner = gridgate("image", "build", str(rootfs), "-o", str(rootfs / "bin" / "x.sif"))
    assert inner.exit_code == 1 and "is inside the root file system" in inner.stderr
    notsif = gridgate("image", "inspect", str(bad))
    assert notsif.exit_code == 1 and "Not a SIF image" in notsif.stderr
    # Nothing half-built is left beside the output.
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".gridgate-build-")] == []


def test_image_build_says_which_package_brings_a_missing_tool(
        rootfs: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # PATH without squashfs-tools: the message names the Debian package.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "cp").symlink_to(shutil.which("cp") or "/bin/cp")
    monkeypatch.setenv("PATH", str(bin_dir))
    result = gridgate("image", "build", str(rootfs), "-o", str(tmp_path / "x.sif"))
    assert result.exit_code == 1
    assert "mksquashfs is not installed: install it with `apt-get install squashfs-tools`" \
        in result.stderr


def test_image_files_follow_the_images_own_symlinks(tmp_path: Path) -> None:
    # A merged-/usr base: /lib -> usr/lib, and an absolute link that must stay in the image.
    root = make_rootfs(tmp_path / "root")
    (root / "usr" / "lib").mkdir(parents=True)
    (root / "lib2").symlink_to("usr/lib")
    (root / "abs").symlink_to("/usr/lib")
    assert inside(root, PurePosixPath("/lib2/x.so")) == root / "usr" / "lib" / "x.so"
    assert inside(root, PurePosixPath("/abs/y/z.so")) == root / "usr" / "lib" / "y" / "z.so"
    assert (root / "usr" / "lib" / "y").is_dir()


def test_every_built_image_has_the_mount_points_ch_run_binds_to(base_sif: Path) -> None:
    """ch-run binds the job directory to /mnt/0 and cannot create a mount point in a
    read-only image: every image gets /mnt/0 ... /mnt/9, as ch-image's have."""
    with base_sif.open("rb") as stream:
        offset = read_sif(stream).primary_partition().offset
    listing = subprocess.run([need("unsquashfs"), "-lls", "-o", str(offset), "-d", "/r",
                              str(base_sif)], capture_output=True, text=True, check=True).stdout
    dirs = {line.split()[-1] for line in listing.splitlines() if line.startswith("d")}
    assert {f"/r/mnt/{n}" for n in range(10)} <= dirs
