"""The suite's pytest settings in pyproject.toml: unknown markers and warnings fail a run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _pytest(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    test = tmp_path / "test_sample.py"
    test.write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(tmp_path), str(test)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120)


def test_an_unknown_marker_is_an_error(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "import pytest\n\n@pytest.mark.postgress\n"
                             "def test_typo():\n    pass\n")
    assert done.returncode != 0
    assert "'postgress' not found in `markers` configuration option" in done.stdout


def test_a_declared_marker_is_accepted(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "import pytest\n\n@pytest.mark.postgres\n"
                             "def test_marked():\n    pass\n")
    assert done.returncode == 0, done.stdout


def test_a_warning_fails_the_test(tmp_path: Path) -> None:
    done = _pytest(tmp_path, "import warnings\n\ndef test_warns():\n"
                             "    warnings.warn('stale', DeprecationWarning)\n")
    assert done.returncode == 1
    assert "DeprecationWarning: stale" in done.stdout
