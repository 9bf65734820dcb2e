"""LIVE (this machine): a batch script holding the gateway's ch-run launch line runs a
built image's SquashFS partition, as the gateway extracts it for charliecloud sites
(gateway.worker.staging.stage_image), with the job directory bound at /mnt/0 (which `gridgate
image build` creates) and a command writing a file there. Needs ch-run and read-write
/dev/fuse (ch-run mounts the SquashFS file with its built-in SquashFUSE)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from adapters.base import ContainerLaunch, SubmitRequest
from adapters.batch.types import JobLayout
from adapters.slurm import SlurmDialect
from adapters.transfer import StagedFile
from adapters.transfer.sources import LocalFile
from containers.image.tools import unpack_once_argv
from containers.launch import ContainerRun, Launcher, launch_argv
from containers.runtimes import RuntimeKind
from containers.site_caps import RuntimeOffer
from containers.versions import version
from gateway.services.data.input_sources import ResolvedInput
from gateway.store import BlobStore
from gateway.worker.staging.stage_image import squashfs_of
from tests.containers.conftest import build, need

CH = RuntimeOffer(RuntimeKind.CHARLIECLOUD, version("0.31"))


def test_the_launch_line_runs_the_extracted_partition_with_the_job_dir_at_mnt_0(
        base_sif: Path, tmp_path: Path) -> None:
    need("ch-run")
    if not os.access("/dev/fuse", os.R_OK | os.W_OK):
        pytest.skip("/dev/fuse is not read-write for this user: ch-run cannot mount SquashFS")
    data = base_sif.read_bytes()
    sif = ResolvedInput(LocalFile(base_sif), StagedFile(hashlib.sha256(data).hexdigest(),
                                                        len(data)))
    store = BlobStore(tmp_path / "store")
    squashfs = squashfs_of(store, sif)
    assert squashfs_of(store, sif) == squashfs  # extracted once per SIF digest
    job = tmp_path / "job"
    job.mkdir()
    run = ContainerRun(CH, str(squashfs.source.path),  # type: ignore[attr-defined]
                       ("/bin/sh", "-c", 'echo "$GREETING from $(pwd -P)" > out.txt'),
                       str(job), env={"GREETING": "hi $HOME"})
    argv = tuple(launch_argv(run, Launcher(), "slurm"))
    script = SlurmDialect().render_script(
        SubmitRequest(tag="gw-ch", workdir=str(job), argv=["/bin/sh"],
                      container=ContainerLaunch(argv)), JobLayout.of(str(job)))
    (tmp_path / "batch.sh").write_text(script)
    done = subprocess.run(["/bin/sh", str(tmp_path / "batch.sh")], capture_output=True,
                          text=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": "/",
                                                      "USER": os.environ.get("USER", "root")})
    assert done.returncode == 0, done.stderr
    assert (job / "out.txt").read_text() == "hi $HOME from /mnt/0\n"


def test_the_image_environment_applies_under_the_jobs_own(
        base_sif: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """The tree stage-in unpacks on a site (unpack_once_argv) and the launch line with
    image_environment: the image's variables apply, the job's win; unprivileged, as the
    site's account runs it (`nobody` here when the tests run as root)."""
    need("ch-run")
    need("unsquashfs")
    where = tmp_path_factory.mktemp("env-image")
    (where / "app.yaml").write_text(
        f"from: {base_sif}\nenvironment:\n  GREETING: from the image\n  ONLY_IMAGE: kept\n")
    build(where / "app.yaml", where / "app.sif")
    data = (where / "app.sif").read_bytes()
    sif = ResolvedInput(LocalFile(where / "app.sif"),
                        StagedFile(hashlib.sha256(data).hexdigest(), len(data)))
    squashfs = squashfs_of(BlobStore(where / "store"), sif)
    # Under /tmp, not pytest's 0700 directory: `nobody` must reach the image and job.
    top = Path(tempfile.mkdtemp(prefix="gridgate-ch-env-"))
    try:
        top.chmod(0o755)
        unpacked, job = top / "image.d", top / "job"
        subprocess.run(unpack_once_argv(str(squashfs.source.path),  # type: ignore[attr-defined]
                                        str(unpacked)), check=True, timeout=60)
        job.mkdir(mode=0o777)
        job.chmod(0o777)
        run = ContainerRun(CH, str(unpacked),
                           ("/bin/sh", "-c", 'echo "$GREETING; $ONLY_IMAGE" > out.txt'),
                           str(job), env={"GREETING": "from the job"}, image_environment=True)
        nobody = (["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
                  if os.geteuid() == 0 else [])
        done = subprocess.run([*nobody, *launch_argv(run, Launcher(), "slurm")],
                              capture_output=True, text=True, timeout=60,
                              env={"PATH": "/usr/bin:/bin", "HOME": "/", "USER": "nobody"})
        assert done.returncode == 0, done.stderr
        assert (job / "out.txt").read_text() == "from the job; kept\n"
    finally:
        subprocess.run(["chmod", "-R", "u+w", str(top)], check=False)
        shutil.rmtree(top, ignore_errors=True)
