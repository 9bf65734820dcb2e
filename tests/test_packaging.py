"""What the gridgate wheel ships, and `gridgate testbed` with and without the testbed installed.

The testbed (root-only developer tooling) is the distribution `gridgate-testbed` in testbed/,
installed from a clone with `pip install -e ./testbed` (tests/run.sh does).
"""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

from setuptools import find_namespace_packages

ROOT = Path(__file__).resolve().parent.parent

# Run as a script: makes `import testbed` fail exactly as it does when nothing provides it.
NO_TESTBED = """
import sys

class NoTestbed:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "testbed":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoTestbed)
from gateway.cli.main import main
main()
"""


def _pyproject(path: Path) -> dict[str, object]:
    with path.open("rb") as fh:
        return tomllib.load(fh)


def _default_packages() -> list[str]:
    # [tool.setuptools.packages.find] in pyproject.toml means namespace discovery (setuptools'
    # default there), which is find_namespace_packages with the same include/exclude.
    # A directory left with only __pycache__ (git keeps it after a move) ships no file.
    find = _pyproject(ROOT / "pyproject.toml")["tool"]["setuptools"]["packages"]["find"]  # type: ignore[index]
    found = find_namespace_packages(where=str(ROOT), include=find.get("include", ["*"]),
                                    exclude=find.get("exclude", ()))
    return [p for p in found if any((ROOT / p.replace(".", "/")).glob("*.py"))]


def test_the_default_install_ships_the_gateway_and_pure_packages_but_not_the_testbed() -> None:
    packages = _default_packages()
    assert "gateway" in packages and "adapters" in packages and "gateway.cli" in packages
    assert "containers" in packages and "workflows" in packages and "rules" in packages
    shipped = {"gateway", "adapters", "containers", "workflows", "rules"}
    assert [p for p in packages if p.split(".")[0] not in shipped] == []
    assert not any("testbed" in p.split(".") and p != "gateway.cli.host.testbed" for p in packages)
    assert (ROOT / "testbed" / "__init__.py").is_file()


def test_the_testbed_distribution_ships_the_testbed_package() -> None:
    setup = _pyproject(ROOT / "testbed" / "pyproject.toml")["tool"]["setuptools"]  # type: ignore[index]
    assert setup["packages"] == ["testbed"]
    assert setup["package-dir"] == {"testbed": "."}


def test_gridgate_testbed_help_works_in_the_dev_install(tmp_path: Path) -> None:
    # The console script, from outside the clone: only the installed testbed can answer.
    gridgate = Path(sysconfig.get_path("scripts")) / "gridgate"
    done = subprocess.run([str(gridgate), "testbed", "--help"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "up" in done.stdout and "down" in done.stdout and "status" in done.stdout


def test_gridgate_testbed_says_what_to_install_when_the_testbed_is_missing(
        tmp_path: Path) -> None:
    for argv in (["testbed", "up", "--prefix", "x"], ["testbed", "--help"], ["testbed"]):
        done = subprocess.run([sys.executable, "-c", NO_TESTBED, *argv], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 1, (argv, done.stdout, done.stderr)
        assert "pip install -e ./testbed" in done.stderr
        assert "Traceback" not in done.stderr
    listing = subprocess.run([sys.executable, "-c", NO_TESTBED, "--help"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
    assert listing.returncode == 0 and "testbed" in listing.stdout
    # Every other command is unaffected.
    version = subprocess.run([sys.executable, "-c", NO_TESTBED, "--version"], cwd=tmp_path,
                             capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and version.stdout.startswith("gridgate ")
