"""Launch lines run in order (a GA4GH TES task's executors): both ways a site runs them,
a batch script's lines and the local site's fixed sequencing script, behave alike. A
failure ends the job with its exit code and runs nothing after it, unless the step
ignores errors; each step's exit code is recorded; the words of every step reach the
program as data."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from adapters.base import STEP_CODES_FILE, ContainerLaunch, LaunchStep, SubmitRequest
from adapters.batch.types import DialectConfig, JobLayout
from adapters.local.launch import container_argv
from adapters.slurm import SlurmDialect

Run = Callable[[ContainerLaunch, Path], int]


def batch(launch: ContainerLaunch, workdir: Path) -> int:
    script = SlurmDialect(DialectConfig()).render_script(
        SubmitRequest(tag="gw-1", workdir=str(workdir), argv=["x"], container=launch),
        JobLayout.of(str(workdir)))
    (workdir / "batch.sh").write_text(script)
    return subprocess.run(["/bin/sh", str(workdir / "batch.sh")], cwd="/",
                          env={"PATH": "/usr/bin:/bin"}, timeout=60).returncode


def local(launch: ContainerLaunch, workdir: Path) -> int:
    argv = container_argv(SubmitRequest(tag="gw-1", workdir=str(workdir), argv=["x"],
                                        container=launch))
    # As the local site's job environment has it.
    env = {"PATH": "/usr/bin:/bin", "GRIDGATE_WORKDIR": str(workdir)}
    return subprocess.run(argv, cwd=workdir, env=env, timeout=60).returncode


def codes(workdir: Path) -> list[int]:
    """The exit codes the steps recorded, and forget them."""
    path = workdir / STEP_CODES_FILE
    found = [int(line) for line in path.read_text().splitlines()]
    path.unlink()
    return found


def step(text: str, ignore_error: bool = False) -> LaunchStep:
    return LaunchStep(("/bin/sh", "-c", text, "step"), ignore_error)


def launch(*steps: LaunchStep) -> ContainerLaunch:
    first, *rest = steps
    return ContainerLaunch(first.argv, then=tuple(rest), ignore_error=first.ignore_error)


@pytest.mark.parametrize("run", [batch, local])
def test_steps_run_in_order_and_stop_at_a_failure(run: Run, tmp_path: Path) -> None:
    log = tmp_path / "log"
    words = LaunchStep(("/bin/sh", "-c", 'printf "%s|" "$@" >> log', "step", "a b",
                        f"$(touch {tmp_path}/canary)", "'", "*", *map(str, range(12))))
    assert run(launch(step("echo 1 >> log"), words, step("echo 3 >> log")), tmp_path) == 0
    assert log.read_text() == f"1\na b|$(touch {tmp_path}/canary)|'|*|" + "".join(
        f"{n}|" for n in range(12)) + "3\n"
    assert not (tmp_path / "canary").exists()
    assert codes(tmp_path) == [0, 0, 0]
    log.unlink()
    assert run(launch(step("echo 1 >> log"), step("exit 7"), step("echo 3 >> log")),
               tmp_path) == 7
    assert log.read_text() == "1\n"
    assert codes(tmp_path) == [0, 7]


@pytest.mark.parametrize("run", [batch, local])
def test_ignored_errors_go_on(run: Run, tmp_path: Path) -> None:
    log = tmp_path / "log"
    assert run(launch(step("exit 3", True), step("echo 2 >> log"), step("exit 4", True)),
               tmp_path) == 0
    assert log.read_text() == "2\n"
    assert codes(tmp_path) == [3, 0, 4]
    assert run(launch(step("exit 5", True)), tmp_path) == 0
    assert codes(tmp_path) == [5]
    assert run(launch(step("exit 5", True), step("exit 6")), tmp_path) == 6
    assert codes(tmp_path) == [5, 6]
