"""setuptools' build backend, with the engine compiled only where asked (setup.py).

A wheel built with GRIDGATE_COMPILE=1 needs mypy (mypyc) to build: it is asked for then
only, so other builds do not download it (setuptools' documented way to add build
requirements dynamically). An editable install never compiles: the C extensions would
sit beside the sources and hide every later edit to them.
"""

import os
from typing import Any

from setuptools import build_meta
from setuptools.build_meta import *  # noqa: F403 (the backend's other hooks, unchanged)

MYPYC = "mypy>=1.10"
Settings = dict[str, Any] | None


def get_requires_for_build_wheel(config_settings: Settings = None) -> list[str]:
    # setuptools learns extra requirements by running setup.py, which would then import
    # mypyc before it is installed; setup.py declares none, so mypy is all there is.
    if os.environ.get("GRIDGATE_COMPILE") == "1":
        return [MYPYC]
    return build_meta.get_requires_for_build_wheel(config_settings)


def get_requires_for_build_editable(config_settings: Settings = None) -> list[str]:
    os.environ.pop("GRIDGATE_COMPILE", None)
    return build_meta.get_requires_for_build_editable(config_settings)


def prepare_metadata_for_build_editable(metadata_directory: str,
                                        config_settings: Settings = None) -> str:
    os.environ.pop("GRIDGATE_COMPILE", None)
    return build_meta.prepare_metadata_for_build_editable(metadata_directory, config_settings)


def build_editable(wheel_directory: str, config_settings: Settings = None,
                   metadata_directory: str | None = None) -> str:
    os.environ.pop("GRIDGATE_COMPILE", None)
    return build_meta.build_editable(wheel_directory, config_settings, metadata_directory)
