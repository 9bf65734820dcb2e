"""LIVE (this machine): an image pushed to the real registry as two layers (a root file
system with /bin/sh, then a layer removing one file with a whiteout and adding another)
is pulled and converted by the gateway, its SquashFS partition extracted and unpacked as
a charliecloud site does, and run with the gateway's ch-run launch line: inside the
container the whiteout holds, the upper layer's file is there, and the image's environment
is in /ch/environment."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import tarfile
from pathlib import Path

from containers.image.tools import unsquashfs_extract_argv
from containers.launch import ContainerRun, Launcher, launch_argv
from containers.refs import parse_image_ref
from containers.runtimes import RuntimeKind
from containers.site_caps import RuntimeOffer
from containers.versions import version
from gateway.services.images.registry_pull import registry_input
from gateway.settings import Settings
from gateway.store import BlobStore
from gateway.worker.staging.stage_image import squashfs_of
from tests.containers.conftest import make_rootfs, need
from tests.registry.fixture import Registry, push_image, tar_layer

CH = RuntimeOffer(RuntimeKind.CHARLIECLOUD, version("0.31"))


def tree_layer(root: Path) -> bytes:
    """A gzip tar layer of the directory `root`, as `docker build` would make one."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for path in sorted(root.rglob("*")):
            tar.add(path, arcname=str(path.relative_to(root)), recursive=False)
    # Level 1: the Snakemake image's 200 MB took 28 s at the default 9, 2.5 s at 1 (76
    # MB against 68): the tests' wall time, not what they test.
    return gzip.compress(raw.getvalue(), compresslevel=1, mtime=0)


def test_a_pulled_image_runs_with_ch_run(registry: Registry, tmp_path: Path) -> None:
    need("ch-run")
    need("unsquashfs")
    rootfs = make_rootfs(tmp_path / "rootfs")
    (rootfs / "etc").mkdir()
    (rootfs / "etc/motd").write_text("removed by the upper layer\n")
    upper = tar_layer([("etc/.wh.motd", "file", b""), ("etc/added", "file", b"upper\n")])
    push_image(registry, "lab/live", "1", [tree_layer(rootfs), upper],
               ["GREETING=hello from the image"])
    settings = Settings(data_dir=tmp_path / "gw", insecure_registries=registry.host)  # type: ignore[call-arg]
    store = BlobStore(settings.store_dir)
    sif = registry_input(settings, store, parse_image_ref(f"docker://{registry.host}/lab/live:1"))
    partition = squashfs_of(store, sif)
    unpacked = tmp_path / "cache" / "image.d"
    unpacked.parent.mkdir()
    subprocess.run(unsquashfs_extract_argv(str(partition.source.path), 0, str(unpacked)),  # type: ignore[attr-defined]
                   check=True, capture_output=True)
    workdir = tmp_path / "job"
    workdir.mkdir()
    # Only /bin/sh is in the image: builtins only.
    script = ('test ! -e /etc/motd && read -r line < /etc/added && echo "$line" && '
              'while read -r env; do echo "$env"; done < /ch/environment > /mnt/0/env')
    run = ContainerRun(CH, str(unpacked), ("/bin/sh", "-c", script), str(workdir))
    argv = launch_argv(run, Launcher(), "slurm")
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False,
                          env={"PATH": "/usr/bin:/bin", "HOME": "/",
                               "USER": os.environ.get("USER", "root")})
    assert done.returncode == 0, (argv, done.stdout, done.stderr)
    assert done.stdout == "upper\n"
    # The image's Env, where `ch-run --set-env` (no argument) reads it.
    assert (workdir / "env").read_text() == "GREETING=hello from the image\n"
