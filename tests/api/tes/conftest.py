"""Fixtures of the live TES tests: an image in the project's real test registry."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.containers.conftest import make_rootfs
from tests.registry.fixture import Registry, push_image
from tests.registry.test_registry_run_live import tree_layer


@pytest.fixture
def image(registry: Registry, tmp_path: Path) -> str:
    """A root file system with /bin/sh and sleep, pushed to the test registry."""
    root = make_rootfs(tmp_path / "rootfs")
    sleep = Path(shutil.which("sleep") or "/bin/sleep").resolve()
    shutil.copy2(sleep, root / "bin" / "sleep")
    libraries = subprocess.run(["ldd", str(sleep)], capture_output=True, text=True,
                               check=True).stdout
    for word in libraries.split():
        if word.startswith("/") and not (root / word.lstrip("/")).exists():
            (root / word.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(word).resolve(), root / word.lstrip("/"))
    push_image(registry, "lab/tools", "1", [tree_layer(root)], ["GREETING=hello"])
    return f"{registry.host}/lab/tools:1"
