"""The runtime's reason for a failed container start, read from recorded stderr: Apptainer's
composed from its source (colours included), ch-run's recorded from real runs here; and one
live ch-run failure."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from containers.runtime_errors import MAX_CHARS, runtime_failure
from tests.containers.conftest import need

RECORDED = Path(__file__).parent / "recorded" / "runtime-errors"
SEPARATOR = "# --- stderr\n"


def recording(path: Path) -> tuple[str | None, str]:
    head, stderr = path.read_text().split(SEPARATOR, 1)
    expect = next(line.removeprefix("# expect: ") for line in head.splitlines()
                  if line.startswith("# expect: "))
    return (None if expect == "none" else expect), stderr


@pytest.mark.parametrize("path", sorted(RECORDED.glob("*.txt")), ids=lambda p: p.stem)
def test_recorded_runtime_failures(path: Path) -> None:
    expect, stderr = recording(path)
    assert runtime_failure(stderr) == expect


def test_a_long_message_is_cut_and_control_characters_dropped() -> None:
    said = runtime_failure("FATAL:   bad\x07 image " + "x" * 1000 + "\n")
    assert said is not None and len(said) == MAX_CHARS and said.endswith("...")
    assert said.startswith("bad image xx")


def test_a_real_ch_run_failure() -> None:
    """LIVE: ch-run 0.31 on a tree that lacks the program."""
    need("ch-run")
    top = Path(os.environ.get("TMPDIR", "/tmp")) / f"gridgate-ch-fail-{os.getpid()}"
    try:
        for name in ("bin", "dev", "proc", "sys", "etc", "tmp", "home", "mnt/0"):
            (top / name).mkdir(parents=True, exist_ok=True)
        for name in ("passwd", "group", "hosts", "resolv.conf"):
            (top / "etc" / name).touch()
        subprocess.run(["chmod", "-R", "a+rX", str(top)], check=True)
        nobody = (["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
                  if os.geteuid() == 0 else [])
        done = subprocess.run([*nobody, "ch-run", str(top), "--", "./app"], capture_output=True,
                              text=True, timeout=60,
                              env={"PATH": "/usr/bin:/bin", "USER": "nobody", "HOME": "/"})
        assert done.returncode != 0
        assert runtime_failure(done.stderr) == (
            "ch-run: can't execve(2): ./app: No such file or directory")
    finally:
        subprocess.run(["rm", "-rf", str(top)], check=False)
