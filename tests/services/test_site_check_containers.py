"""`gridgate site check` asks each declared container runtime for its release, through the
adapter's transport: recorded answers (tests/services/recorded/runtimes, each naming its
source: real runs of ch-run and bash here, apptainer's and SingularityCE's version template
in their source) replayed by `adapters.testing.ReplayTransport`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adapters.errors import CommandTimeout
from adapters.testing import Recording, ReplayTransport
from containers.runtimes import RuntimeKind
from gateway.services.sites.check import check_site
from gateway.services.sites.check_containers import check_runtimes, parse_version
from gateway.services.sites.check_report import Status
from gateway.siteconfig import SiteConfig, load_site_config, with_updates
from tests.schedulers.recorded import load
from tests.services.test_remote_pbs_lsf import (
    EXAMPLES,
    FOUND_MPIRUN,
    PBS_SITE,
    SCRATCH,
    SCRATCH_OK,
    _check_pool,
    _check_settings,
)

RECORDED = Path(__file__).with_name("recorded") / "runtimes"
GALAXY = Path(__file__).resolve().parents[2] / "site-configs" / "galaxy.yaml"


def recorded(name: str) -> Recording:
    return Recording.load(RECORDED / f"{name}.txt")


def declaring(*runtimes: dict[str, Any]) -> SiteConfig:
    return with_updates(load_site_config(GALAXY), {"containers": {"runtimes": list(runtimes)}})


@pytest.mark.parametrize(("kind", "name", "product", "release"), [
    (RuntimeKind.CHARLIECLOUD, "ch-run-0.31", None, "0.31"),
    (RuntimeKind.APPTAINER, "apptainer-1.2.5", "apptainer", "1.2.5"),
    (RuntimeKind.SINGULARITY, "singularity-ce-3.11.0", "singularity-ce", "3.11.0"),
    (RuntimeKind.SINGULARITY, "singularity-is-apptainer", "apptainer", "1.3.0"),
])
def test_each_runtime_says_its_release_its_own_way(kind: RuntimeKind, name: str,
                                                   product: str | None,
                                                   release: str) -> None:
    answer = recorded(name)
    reported = parse_version(kind, (answer.stdout + b"\n" + answer.stderr).decode())
    assert reported is not None
    assert (reported.product, str(reported.version)) == (product, release)


# (declared runtime, recording answering its --version, status, detail)
CASES: list[tuple[dict[str, Any], str, Status, str]] = [
    ({"kind": "charliecloud", "version": "0.31"}, "ch-run-0.31", Status.OK,
     "`ch-run` is charliecloud 0.31, as declared"),
    ({"kind": "charliecloud", "version": "0.30"}, "ch-run-0.31", Status.FAIL,
     "declared charliecloud 0.30, but `ch-run --version` says 0.31: set "
     "containers.runtimes[0].version to \"0.31\""),
    ({"kind": "apptainer", "version": "1.2"}, "apptainer-1.2.5", Status.OK,
     "`apptainer` is apptainer 1.2.5, as declared"),
    ({"kind": "apptainer", "version": "1.2.5"}, "apptainer-missing", Status.FAIL,
     "`apptainer --version` exited 127: bash: apptainer: command not found"),
    ({"kind": "singularity", "version": "3.11.0"}, "singularity-ce-3.11.0", Status.OK,
     "`singularity` is singularity 3.11.0, as declared"),
    ({"kind": "singularity", "version": "3.11.0"}, "singularity-is-apptainer", Status.FAIL,
     "`singularity --version` says apptainer 1.3.0, not singularity: declare it as kind "
     "apptainer"),
    ({"kind": "charliecloud", "version": "0.31"}, "ch-run-no-user", Status.FAIL,
     "`ch-run --version` exited 1: ch-run[7487]: error: $USER not set (ch-run.c:122)"),
]


@pytest.mark.parametrize(("declared", "answer", "status", "detail"), CASES)
def test_the_declared_release_against_the_reported(declared: dict[str, Any], answer: str,
                                                   status: Status, detail: str) -> None:
    config = declaring(declared)
    t = ReplayTransport()
    t.expect((config.container_caps().runtimes[0].argv[0], "--version"), recorded(answer))
    [check] = check_runtimes(config, t, 30.0)
    t.assert_done()
    assert (check.name, check.status, check.detail) == (
        f"runtime {declared['kind']}", status, detail)


def test_a_runtime_at_its_own_path_and_one_that_hangs() -> None:
    config = declaring({"kind": "apptainer", "version": "1.2.5",
                        "command": ["/opt/apptainer/bin/apptainer"]},
                       {"kind": "charliecloud", "version": "0.31"})
    t = ReplayTransport()
    t.expect(("/opt/apptainer/bin/apptainer", "--version"), recorded("apptainer-1.2.5"))
    t.expect(("ch-run", "--version"), CommandTimeout("ch-run --version did not finish in 30 s"))
    first, second = check_runtimes(config, t, 30.0)
    t.assert_done()
    assert first.status is Status.OK
    assert first.detail == "`/opt/apptainer/bin/apptainer` is apptainer 1.2.5, as declared"
    assert (second.status, second.detail) == (
        Status.FAIL, "`ch-run --version`: ch-run --version did not finish in 30 s")


def test_site_check_asks_the_runtimes_after_the_launchers(tmp_path: Path) -> None:
    config = with_updates(load_site_config(EXAMPLES / f"{PBS_SITE}.yaml"), {
        "partitions": [{"name": "workq", "default": True, "max_nodes": 4, "nodes": 4,
                        "max_walltime": "24:00:00", "cores_per_node": 2,
                        "memory_mb_per_node": 512}],
        "containers": {"runtimes": [{"kind": "charliecloud", "version": "0.31"}]}})
    t = ReplayTransport()
    t.expect(("true",))
    t.expect(("/opt/pbs/bin/qstat", "-Q", "-f", "-F", "json"), load("pbs", "qstat_queues.txt"))
    t.expect(("sh", "-c", 'command -v -- "$1"', "sh", "mpirun"), FOUND_MPIRUN)
    t.expect(("ch-run", "--version"), recorded("ch-run-0.31"))
    t.expect(("sh", "-c", 'test -d "$1" || exit 3; '
              'probe=$(mktemp -d "$1/.gridgate-check.XXXXXX" 2>/dev/null) || exit 4; '
              'rmdir "$probe"', "sh", SCRATCH), SCRATCH_OK)
    report = check_site(config, _check_settings(tmp_path), _check_pool(t))
    t.assert_done()
    assert [(c.name, c.status) for c in report.checks] == [
        ("ssh", Status.OK), ("scheduler", Status.OK), ("partition workq", Status.OK),
        ("launcher mpirun", Status.OK), ("runtime charliecloud", Status.OK),
        ("scratch_root", Status.OK)], report.checks
