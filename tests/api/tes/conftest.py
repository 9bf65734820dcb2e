"""Fixtures of the live TES tests: an image in the project's real test registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.containers.conftest import make_rootfs
from tests.registry.fixture import Registry, push_image
from tests.registry.test_registry_run_live import tree_layer


@pytest.fixture
def image(registry: Registry, tmp_path: Path) -> str:
    """A root file system with /bin/sh and sleep, pushed to the test registry."""
    root = make_rootfs(tmp_path / "rootfs", "sleep")
    push_image(registry, "lab/tools", "1", [tree_layer(root)], ["GREETING=hello"])
    return f"{registry.host}/lab/tools:1"
