"""The pure parts of `gridgate site check`: configured partitions against the scheduler's."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from adapters.batch.types import QueueInfo
from gateway.cli.host.site import site_app
from gateway.domain.errors import Invalid
from gateway.services.sites.check import (
    Check,
    SiteCheckReport,
    Status,
    check_account,
    compare_partitions,
    launchers,
)
from gateway.siteconfig import Partition, SiteConfig, load_site_config, with_updates

CONFIGS = Path(__file__).resolve().parents[2] / "site-configs"


def _partition(**changes: Any) -> Partition:
    fields: dict[str, Any] = {"name": "debug", "default": True, "max_nodes": 2, "nodes": 4,
                              "max_walltime": "00:30:00", "cores_per_node": 8,
                              "memory_mb_per_node": 4096}
    return Partition.model_validate({**fields, **changes})


def _queue(**changes: Any) -> QueueInfo:
    fields: dict[str, Any] = {"name": "debug", "available": True, "max_walltime": 1800,
                              "max_nodes": 2, "nodes_total": 4, "cpus_per_node": 8,
                              "cpus_total": 32, "memory_mb_per_node": 4096}
    return QueueInfo(**{**fields, **changes})


# (configured partition changes, reported queue changes, expected problem text or None)
CASES: list[tuple[dict[str, Any], dict[str, Any], str | None]] = [
    ({}, {}, None),
    # The config may promise less than the scheduler grants.
    ({"max_nodes": 1, "max_walltime": "00:10:00", "cores_per_node": 4,
      "memory_mb_per_node": 1024}, {}, None),
    # What the scheduler does not report is not held against the config.
    ({"max_walltime": "UNLIMITED"},
     {"max_walltime": None, "max_nodes": None, "nodes_total": None,
      "cpus_per_node": None, "cpus_total": None, "memory_mb_per_node": None}, None),
    ({}, {"available": None}, None),
    ({"max_nodes": 3}, {}, "max_nodes 3 > the scheduler's job size limit 2"),
    ({"max_nodes": 4}, {"max_nodes": None, "nodes_total": 3},
     "max_nodes 4 > the 3 nodes the partition has"),
    ({"max_walltime": "01:00:00"}, {}, "max_walltime 01:00:00 > the scheduler's 00:30:00"),
    ({"max_walltime": "UNLIMITED"}, {"max_walltime": 7 * 86400},
     "max_walltime UNLIMITED > the scheduler's 7-00:00:00"),
    ({"cores_per_node": 16}, {"cpus_total": None},
     "cores_per_node 16 > the scheduler's 8"),
    ({"max_nodes": 2, "cores_per_node": 4}, {"cpus_per_node": None, "cpus_total": 6},
     "max_nodes x cores_per_node = 8 cores > the 6 the scheduler has in all"),
    ({"memory_mb_per_node": 8192}, {}, "memory_mb_per_node 8192 > the scheduler's 4096"),
    ({"scratch_mb_per_node": 2048}, {"scratch_mb_per_node": 2048}, None),
    ({}, {"scratch_mb_per_node": 0}, None),  # none declared: none promised
    ({"scratch_mb_per_node": 2048}, {"scratch_mb_per_node": 0},
     "scratch_mb_per_node 2048 > the scheduler's 0 (jobs asking for more would never run)"),
    ({}, {"available": False, "state": "down"},
     "the scheduler reports it unavailable (down)"),
]


@pytest.mark.parametrize(("configured", "reported", "problem"), CASES)
def test_compare_partition_limits(configured: dict[str, Any], reported: dict[str, Any],
                                  problem: str | None) -> None:
    [check] = compare_partitions([_partition(**configured)], [_queue(**reported)])
    assert check.name == "partition debug"
    if problem is None:
        assert check.status is Status.OK, check.detail
    else:
        assert check.status is Status.FAIL
        assert check.detail == problem


def test_several_problems_are_all_reported() -> None:
    [check] = compare_partitions([_partition(max_nodes=3, memory_mb_per_node=9000)],
                                 [_queue()])
    assert check.status is Status.FAIL
    assert "max_nodes 3" in check.detail and "memory_mb_per_node 9000" in check.detail


def test_missing_partition_names_what_the_scheduler_has() -> None:
    checks = compare_partitions(
        [_partition(), _partition(name="long", default=False)],
        [_queue(), _queue(name="batch")])
    assert [(c.name, c.status) for c in checks] == [
        ("partition debug", Status.OK), ("partition long", Status.FAIL)]
    assert checks[1].detail == "the scheduler has no such partition (it has: batch, debug)"


def _config(name: str) -> SiteConfig:
    return load_site_config(CONFIGS / f"{name}.yaml")


def test_account_is_the_community_one_or_the_first_mapped() -> None:
    assert check_account(_config("roadrunner")).user == "gwcomm"
    assert check_account(_config("parnass2")).user == "gwalice"


def test_a_descriptive_site_is_not_checked() -> None:
    seed = next((CONFIGS / "seeds").glob("*.yaml"))
    config = load_site_config(seed)
    assert config.descriptive
    with pytest.raises(Invalid, match="descriptive"):
        check_account(config)


def test_launchers_are_listed_once_each() -> None:
    assert launchers(_config("roadrunner")) == [
        ("mpich", "mpirun.mpich"), ("mpich, openmpi", "/usr/bin/srun"),
        ("openmpi", "mpirun.openmpi")]
    assert launchers(_config("galaxy")) == [("mpich", "mpirun.mpich"),
                                            ("openmpi", "mpirun.openmpi")]
    config = with_updates(_config("galaxy"), {"mpi_flavors": [
        {"name": "mpich", "launchers": ["mpiexec"]}]})
    assert launchers(config) == [("mpich", "mpiexec")]


def test_report_passes_only_when_every_check_passed() -> None:
    passed = Check("ssh", Status.OK, "")
    assert SiteCheckReport("s", "u", (passed,)).ok
    assert not SiteCheckReport("s", "u", (passed, Check("scheduler", Status.SKIP, ""))).ok
    assert not SiteCheckReport("s", "u", (passed, Check("scratch_root", Status.FAIL, ""))).ok
    assert SiteCheckReport("s", "u", (passed,)).as_json() == {
        "site": "s", "account": "u", "ok": True,
        "checks": [{"check": "ssh", "status": "pass", "detail": ""}]}


# --- the CLI's refusals, before anything connects ----------------------------------------

runner = CliRunner()


def _cli(configs: Path | None, name: str) -> tuple[int, str]:
    env = {"GRIDGATE_SITE_CONFIGS_DIR": str(configs) if configs else None}
    result = runner.invoke(site_app, ["check", name], env=env)
    return result.exit_code, result.stderr


def test_check_needs_the_site_configs_dir() -> None:
    assert _cli(None, "roadrunner") == (
        1, "error: GRIDGATE_SITE_CONFIGS_DIR is not set: point it at the gateway's directory "
           "of <site>.yaml files\n")


def test_check_an_unknown_site(tmp_path: Path) -> None:
    shutil.copy(CONFIGS / "seeds" / "unm-roadrunner.yaml", tmp_path)
    assert _cli(tmp_path, "nosuch") == (
        6, f"error: no site 'nosuch' in {tmp_path} (sites: unm-roadrunner)\n")


def test_check_refuses_templates_and_descriptive_sites(tmp_path: Path) -> None:
    shutil.copy(CONFIGS / "roadrunner.yaml", tmp_path)
    code, err = _cli(tmp_path, "roadrunner")
    assert code == 1 and "is a template without host keys" in err
    shutil.copy(CONFIGS / "seeds" / "unm-roadrunner.yaml", tmp_path)
    code, err = _cli(tmp_path, "unm-roadrunner")
    assert code == 5 and "is descriptive: the gateway never connects to it" in err
