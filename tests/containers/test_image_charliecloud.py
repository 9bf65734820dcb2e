"""LIVE: Charliecloud (Debian's charliecloud-runtime: ch-run, SquashFUSE built in) runs a
command in a SIF that `gridgate image build` made, from the same SquashFS partition
Apptainer would mount (Apptainer itself is not packaged for Debian 12).

What works depends on the machine, and each test says what it needs:
- `ch-run FILE.sqfs` (the partition copied out by `gridgate image extract`) mounts it with
  SquashFUSE: needs read-write /dev/fuse (root here; fuse3's setuid fusermount3 otherwise).
- `squashfuse -o offset=N IMAGE.sif DIR` mounts the partition inside the SIF without a copy:
  as root (an unprivileged unmount needs fusermount3).
- `ch-run DIR` on the partition unpacked by `unsquashfs -o N`: any user, in an unprivileged
  user namespace; here as `nobody` (setpriv) when the tests run as root.
ch-run cannot take the SIF itself ("unknown image type").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from containers.image.sif import read_sif
from tests.containers.conftest import build, gridgate_ok, need

ROOT = os.geteuid() == 0
COMMAND = ["/bin/sh", "-c", 'echo "hi $GREETING"; read line < /opt/app/hello.txt; echo "$line"']
EXPECTED = "hi from gridgate\nhello from the image\n"


def env(user: str) -> dict[str, str]:
    # ch-run refuses to start without $USER.
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "USER": user, "HOME": "/",
            "LANG": "C"}


def ch_run(image: Path, *options: str, user: str = "root" if ROOT else "",
           as_nobody: bool = False) -> subprocess.CompletedProcess[str]:
    prefix = (["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
              if as_nobody else [])
    return subprocess.run(
        [*prefix, need("ch-run"), "--set-env", "--env-no-expand", *options, str(image), "--",
         *COMMAND], capture_output=True, text=True, timeout=60,
        env=env("nobody" if as_nobody else user or os.environ.get("USER", "user")))


@pytest.fixture(scope="module")
def app_sif(base_sif: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = tmp_path_factory.mktemp("app")
    (where / "hello.txt").write_text("hello from the image\n")
    (where / "app.yaml").write_text(
        f"from: {base_sif}\nfiles:\n  hello.txt: /opt/app/hello.txt\n"
        "environment:\n  GREETING: from gridgate\n")
    build(where / "app.yaml", where / "app.sif")
    return where / "app.sif"


def partition_offset(image: Path) -> int:
    with image.open("rb") as stream:
        return read_sif(stream).primary_partition().offset


def test_ch_run_refuses_the_sif_file_itself(app_sif: Path) -> None:
    done = ch_run(app_sif)
    assert done.returncode != 0 and "unknown image type" in done.stderr


def test_ch_run_runs_the_extracted_image_partition_with_squashfuse(
        app_sif: Path, tmp_path: Path) -> None:
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        pytest.skip("/dev/fuse is not read-write for this user: ch-run cannot mount SquashFS "
                    "(the unpacked-directory test covers this machine)")
    squashfs = tmp_path / "app.sqfs"
    out = gridgate_ok("image", "extract", str(app_sif), "-o", str(squashfs)).stdout
    assert f"run with: ch-run {squashfs} -- CMD" in out
    (tmp_path / "mnt").mkdir()
    done = ch_run(squashfs, "-m", str(tmp_path / "mnt"))
    assert (done.returncode, done.stdout) == (0, EXPECTED), done.stderr


@pytest.fixture
def mounted(app_sif: Path, tmp_path: Path) -> Iterator[Path]:
    if not ROOT:
        pytest.skip("squashfuse without root needs fusermount3 (Debian fuse3) to unmount")
    mountpoint = tmp_path / "mnt"
    mountpoint.mkdir()
    subprocess.run([need("squashfuse"), "-o", f"offset={partition_offset(app_sif)}",
                    str(app_sif), str(mountpoint)], check=True, timeout=60)
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", str(mountpoint)], check=True, timeout=60)


def test_ch_run_runs_a_squashfuse_mount_of_the_image_at_its_partition_offset(
        mounted: Path) -> None:
    assert (mounted / "bin" / "sh").is_file()
    done = ch_run(mounted)
    assert (done.returncode, done.stdout) == (0, EXPECTED), done.stderr


def test_ch_run_runs_the_unpacked_image_partition_unprivileged(app_sif: Path) -> None:
    # Under /tmp, not pytest's 0700 directory: `nobody` must reach the image.
    top = Path(tempfile.mkdtemp(prefix="gridgate-ch-"))
    try:
        top.chmod(0o755)
        unpacked = top / "app"
        subprocess.run([need("unsquashfs"), "-no-progress", "-o", str(partition_offset(app_sif)),
                        "-d", str(unpacked), str(app_sif)], check=True, capture_output=True,
                       timeout=60)
        done = ch_run(unpacked, as_nobody=ROOT)
        assert (done.returncode, done.stdout) == (0, EXPECTED), done.stderr
        # Inside, the process is the caller, mapped by the user namespace (no root).
        uid = subprocess.run(
            [*(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if ROOT else []),
             need("ch-run"), str(unpacked), "--", "/bin/sh", "-c",
             'while read key value rest; do [ "$key" = Uid: ] && echo "$value"; done '
             '< /proc/self/status'],
            capture_output=True, text=True, env=env("nobody" if ROOT else "user"), timeout=60)
        assert uid.stdout.strip() == str(65534 if ROOT else os.getuid()), uid.stderr
    finally:
        shutil.rmtree(top)
