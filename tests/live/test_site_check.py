"""`gridgate site check` against the live testbed: real sshd, Slurm and Grid Engine."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gateway.cli.host.site import site_app
from gateway.siteconfig import dump_site_config, load_site_config, with_updates
from testbed.state import TestbedInfo
from tests.testbed.fixture import ssh

runner = CliRunner()


def _check(configs: Path, name: str, *options: str) -> tuple[int, str]:
    result = runner.invoke(site_app, ["check", name, *options],
                           env={"GRIDGATE_SITE_CONFIGS_DIR": str(configs)})
    return result.exit_code, result.stdout + result.stderr


@pytest.mark.parametrize("site", ["roadrunner", "galaxy", "parnass2"])
def test_every_check_passes_on_the_testbed(testbed: TestbedInfo, site: str) -> None:
    config = load_site_config(Path(testbed.site_configs) / f"{site}.yaml")
    code, output = _check(Path(testbed.site_configs), site, "--json")
    assert code == 0, output
    report = json.loads(output)
    assert report["ok"] is True
    statuses = {c["check"]: c["status"] for c in report["checks"]}
    assert set(statuses.values()) == {"pass"}, output
    assert {"ssh", "scheduler", "scratch_root"} <= statuses.keys()
    assert {f"partition {p.name}" for p in config.partitions} <= statuses.keys()
    # Every MPI flavor's launchers were looked for.
    assert {f"launcher {f.argv[0]}" for f in config.mpi_flavors} <= statuses.keys()
    assert ("launcher /usr/bin/srun" in statuses) == (config.scheduler.kind == "slurm")
    # roadrunner offers QOS (made in its slurmdbd): they are looked for.
    assert ("qos" in statuses) == bool(config.scheduler.qos)


def test_the_table_says_all_passed(testbed: TestbedInfo) -> None:
    code, output = _check(Path(testbed.site_configs), "galaxy")
    assert code == 0, output
    assert "partition all.q" in output and "PASS" in output
    assert output.rstrip().endswith("all checks passed")


def test_a_wrong_partition_limit_fails(testbed: TestbedInfo, tmp_path: Path) -> None:
    config = load_site_config(Path(testbed.site_configs) / "roadrunner.yaml")
    partitions = [p.model_dump(mode="json") for p in config.partitions]
    partitions[0]["memory_mb_per_node"] = 1_000_000
    partitions[1]["scratch_mb_per_node"] = 4096  # TmpDisk is 2048
    partitions.append({**partitions[1], "name": "nosuch"})
    flavors = [f.model_dump(mode="json") for f in config.mpi_flavors]
    flavors[0]["command"] = ["mpirun.nosuch; touch /tmp/gridgate-check-pwned"]
    wrong = with_updates(config, {"partitions": partitions, "mpi_flavors": flavors,
                                  "scratch_root": "/home/no/such/dir",
                                  "scheduler": {"qos": ["long", "nosuch"]}})
    (tmp_path / "roadrunner.yaml").write_text(dump_site_config(wrong))
    code, output = _check(tmp_path, "roadrunner", "--json")
    assert code == 1, output
    statuses = {c["check"]: (c["status"], c["detail"]) for c in json.loads(output)["checks"]}
    assert statuses["ssh"][0] == statuses["scheduler"][0] == "pass"
    assert statuses["partition debug"] == (
        "fail", "memory_mb_per_node 1000000 > the scheduler's 512")
    assert statuses["partition batch"] == (
        "fail", "scratch_mb_per_node 4096 > the scheduler's 2048 (jobs asking for more would "
                "never run)")
    assert statuses["qos"] == (
        "fail", "the scheduler knows no QOS nosuch (it has: normal, long)")
    assert statuses["partition nosuch"][0] == "fail"
    # The launcher's name is data for `command -v`, never shell code.
    assert statuses["launcher mpirun.nosuch; touch /tmp/gridgate-check-pwned"] == (
        "fail", "not found on the account's PATH (needed by MPI mpich)")
    ssh(testbed.sites["roadrunner"], "gwcomm", ["test", "!", "-e", "/tmp/gridgate-check-pwned"])
    assert statuses["launcher mpirun.openmpi"][0] == "pass"
    assert statuses["scratch_root"] == (
        "fail", "/home/no/such/dir does not exist (or is not a directory)")


def test_a_host_key_mismatch_is_a_clear_failure(testbed: TestbedInfo, tmp_path: Path) -> None:
    config = load_site_config(Path(testbed.site_configs) / "roadrunner.yaml")
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "other",
                    "-f", str(tmp_path / "other")], check=True)
    other = (tmp_path / "other.pub").read_text().strip()
    configs = tmp_path / "configs"
    configs.mkdir()
    (configs / "roadrunner.yaml").write_text(
        dump_site_config(with_updates(config, {"ssh": {"host_keys": [other]}})))
    code, output = _check(configs, "roadrunner")
    assert code == 1, output
    fingerprint = subprocess.run(["ssh-keygen", "-l", "-f", str(tmp_path / "other.pub")],
                                 check=True, capture_output=True, text=True).stdout.split()[1]
    [failure] = [line for line in output.splitlines() if line.startswith("FAIL ")]
    assert failure.startswith("FAIL ssh: gwcomm@") and "HOST KEY MISMATCH" in failure
    # Both fingerprints: the one the server offered and the one the config pins.
    assert f"the config pins ssh-ed25519 {fingerprint}" in failure
    assert "the server offered ssh-ed25519 SHA256:" in failure
    assert "SKIP" in output and "PASS" not in output
