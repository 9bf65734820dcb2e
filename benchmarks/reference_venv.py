"""An interpreter for a benchmark's reference method whose packages the gateway does not
need (Extra-P, LightGBM): this one if it imports the module, else a venv of its own,
made and filled from the registry when it lacks them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path


def _imports(python: str, module: str) -> bool:
    probe = subprocess.run([python, "-c", f"import {module}"], capture_output=True,
                           check=False)
    return probe.returncode == 0


def python_with(module: str, requirements: Sequence[str], venv: Path | None,
                hint: str) -> str:
    """An interpreter that imports `module`: this one, else `venv` (made, and given
    `requirements`, if need be); without a venv, exit saying `hint`."""
    if _imports(sys.executable, module):
        return sys.executable
    if venv is None:
        sys.exit(f"{module} is not installed here: {hint}")
    python = venv / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if not _imports(str(python), module):
        subprocess.run([str(python), "-m", "pip", "install", "-q", *requirements],
                       check=True, stdout=sys.stderr)
    return str(python)
