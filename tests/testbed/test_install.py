"""The install step: every testbed package present after it, and a quick no-op when so."""

from __future__ import annotations

import subprocess
import sys

from testbed.install import PACKAGES, install, missing_packages


def test_install_leaves_nothing_missing_and_then_does_nothing() -> None:
    install()
    assert missing_packages() == []
    assert install() == []  # nothing to do: no apt call
    check = subprocess.run([sys.executable, "-m", "testbed.install", "--check"],
                           capture_output=True, text=True, check=False)
    assert (check.returncode, check.stdout) == (0, "")


def test_unknown_packages_count_as_missing() -> None:
    assert missing_packages([*PACKAGES[:2], "gridgate-no-such-package"]) == [
        "gridgate-no-such-package"]
