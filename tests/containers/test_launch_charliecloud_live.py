"""LIVE (this machine): a batch script holding the gateway's ch-run launch line runs a
built image's SquashFS partition, as the gateway extracts it for charliecloud sites
(gateway.worker.stage_image), with the job directory bound at /mnt/0 (which `gridgate
image build` creates) and a command writing a file there. Needs ch-run and read-write
/dev/fuse (ch-run mounts the SquashFS file with its built-in SquashFUSE)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from adapters.base import ContainerLaunch, SubmitRequest
from adapters.scheduler_types import JobLayout
from adapters.slurm import SlurmDialect
from adapters.transfer import StagedFile
from adapters.transfer.sources import LocalFile
from containers.launch import ContainerRun, Launcher, launch_argv
from containers.runtimes import RuntimeKind
from containers.site_caps import RuntimeOffer
from containers.versions import version
from gateway.services.input_sources import ResolvedInput
from gateway.store import BlobStore
from gateway.worker.stage_image import squashfs_of
from tests.containers.conftest import need

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
