"""A tiny real root file system (this host's /bin/sh and the libraries `ldd` names), and SIF
images built from it by `gridgate image build` with the real squashfs-tools and siftool."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from containers.image.tools import DEBIAN_PACKAGES
from gateway.cli.main import app

SHELL = Path("/bin/sh")


def gridgate(*args: str) -> Result:
    """`gridgate ARGS` in-process."""
    return CliRunner().invoke(app, list(args))


def gridgate_ok(*args: str) -> Result:
    result = gridgate(*args)
    assert result.exit_code == 0, (f"gridgate {' '.join(args)} exited {result.exit_code}\n"
                                   f"{result.stdout}\n{result.stderr}\n{result.exception!r}")
    return result


def need(tool: str) -> str:
    """The path of `tool`; tests/run.sh installs it (fail, naming the package, if not)."""
    path = shutil.which(tool)
    assert path, f"{tool} is missing: apt-get install {DEBIAN_PACKAGES[tool]}"
    return path


def make_rootfs(root: Path, *programs: str) -> Path:
    """/bin/sh and the host's `programs` (e.g. "mkdir") in /bin, with their libraries at
    the paths the dynamic loader looks for them."""
    (root / "bin").mkdir(parents=True)
    binaries = [(SHELL, "sh")] + [(Path(shutil.which(p) or f"/bin/{p}"), p) for p in programs]
    for binary, name in binaries:
        shutil.copy2(binary.resolve(), root / "bin" / name)
        copy_libraries(root, binary.resolve())
    return root


def copy_libraries(root: Path, binary: Path) -> None:
    """Copy the shared libraries `binary` (a program or a library) needs to their paths
    below `root`."""
    listing = subprocess.run(["ldd", str(binary)], capture_output=True, text=True,
                             check=False).stdout
    for library in re.findall(r"(/\S+)", listing):
        target = root / library.lstrip("/")
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(library).resolve(), target)


def build(source: Path, output: Path, *extra: str) -> dict[str, object]:
    """`gridgate image build SOURCE -o OUTPUT --json`, parsed."""
    result = gridgate_ok("image", "build", str(source), "-o", str(output), "--json", *extra)
    built: dict[str, object] = json.loads(result.stdout)
    return built


@pytest.fixture(scope="session")
def rootfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_rootfs(tmp_path_factory.mktemp("rootfs") / "root")


@pytest.fixture(scope="session")
def base_sif(rootfs: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    need("mksquashfs")
    need("siftool")
    output = tmp_path_factory.mktemp("images") / "base.sif"
    build(rootfs, output)
    return output
