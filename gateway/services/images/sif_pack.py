"""Pack a root file system unpacked on the gateway into a SIF, as `gridgate image build`
does (mksquashfs, then siftool: the environment object and the primary system partition):
the mount points runtimes need are added, the environment goes where Apptainer and ch-run
read it, and the image's files belong to root inside it."""

from __future__ import annotations

import os
from pathlib import Path

from containers.image import definition as image_def
from gateway import local_tools
from gateway.services.images.layer_unpack import resolve_inside

ARCH = "amd64"  # the platform the gateway pulls (containers.image.oci.PLATFORM)


class PackError(Exception):
    """mksquashfs or siftool failed or is missing; the message says which and why."""


def _write_new(path: Path, text: str, mode: int) -> None:
    if os.path.lexists(path):
        path.unlink()  # never write through a link the image put there
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(path, mode)


def _existing(path: Path) -> str | None:
    return path.read_text() if path.is_file() and not path.is_symlink() else None


def prepare_root(root: Path, environment: dict[str, str]) -> None:
    """Add the runtimes' mount points and environment files to the unpacked `root`."""
    for name, mode in image_def.SKELETON_DIRS.items():
        path = resolve_inside(root, name.lstrip("/"), make=True)
        if not os.path.lexists(path):
            path.mkdir()
            os.chmod(path, mode)
    for name in image_def.SKELETON_FILES:
        path = resolve_inside(root, name.lstrip("/"), make=True)
        if not os.path.lexists(path):
            _write_new(path, "", 0o644)
    script = resolve_inside(root, image_def.APPTAINER_ENV.lstrip("/"), make=True)
    _write_new(script, image_def.environment_script(environment, _existing(script)), 0o755)
    if environment:
        ch_env = resolve_inside(root, image_def.CHARLIECLOUD_ENV.lstrip("/"), make=True)
        _write_new(ch_env, image_def.charliecloud_environment(environment, _existing(ch_env)),
                   0o644)


def pack_sif(root: Path, work: Path, environment: dict[str, str]) -> Path:
    """Build `work/image.sif` from `root` (which it prepares first); its path."""
    prepare_root(root, environment)
    return local_tools.pack_sif(root, work, ARCH, environment, PackError, all_root=True)
