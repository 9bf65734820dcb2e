"""`gridgate site validate` and `gridgate site schema` (offline), through Typer's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from gateway.cli.host.site import site_app
from gateway.siteconfig import site_config_json_schema
from tests.siteconfig.conftest import GOOD

CONFIGS = Path(__file__).resolve().parents[2] / "site-configs"
runner = CliRunner()


def test_validate_a_good_file(tmp_path: Path) -> None:
    path = tmp_path / "alpha.yaml"
    path.write_text(yaml.safe_dump(GOOD, sort_keys=False))
    result = runner.invoke(site_app, ["validate", str(path)])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == (
        f"{path}: valid site 'alpha': slurm, 2 partitions (default debug), community "
        "accounts, MPI mpich, openmpi, enabled")
    assert result.stderr == ""


def test_validate_a_bad_file(tmp_path: Path) -> None:
    bad = {**GOOD, "ssh": {"host": "login.alpha:2222", "host_keys": []}, "chrage_factor": 2}
    path = tmp_path / "alpha.yaml"
    path.write_text(yaml.safe_dump(bad, sort_keys=False))
    result = runner.invoke(site_app, ["validate", str(path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0] == f"{path}: invalid site configuration (2 problems):"
    assert lines[1] == "  ssh.host: 'login.alpha:2222' has a port: put the port in `port`"
    assert lines[2].startswith("  chrage_factor: unknown field: remove it or fix its spelling")
    # Once those are fixed, the cross-field rules speak.
    bad.pop("chrage_factor")
    bad["ssh"]["host"] = "login.alpha"
    path.write_text(yaml.safe_dump(bad, sort_keys=False))
    result = runner.invoke(site_app, ["validate", str(path)])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[1].startswith(
        "  ssh.host_keys: required and non-empty: pin the login node's public host key")


def test_validate_several_files_fails_if_any_fails(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    result = runner.invoke(site_app, ["validate", str(CONFIGS / "roadrunner.yaml"),
                                      str(CONFIGS / "seeds" / "jpl-beowulf.yaml"), str(missing)])
    assert result.exit_code == 1
    out = result.stdout.splitlines()
    assert "roadrunner.yaml: valid site 'roadrunner'" in out[0]
    assert "template: `gridgate testbed up` fills in its host keys" in out[0]
    assert "jpl-beowulf.yaml: valid site 'jpl-beowulf'" in out[1]
    assert "descriptive: the gateway never connects to it" in out[1]
    assert f"{missing}: invalid site configuration (1 problem):" in result.stderr
    assert "(file): cannot read it: No such file or directory" in result.stderr


def test_validate_needs_a_file() -> None:
    result = runner.invoke(site_app, ["validate"])
    assert result.exit_code == 2
    assert "Missing argument 'FILE...'" in result.stderr


def test_schema_prints_the_json_schema() -> None:
    result = runner.invoke(site_app, ["schema"])
    assert result.exit_code == 0
    assert json.loads(result.stdout) == site_config_json_schema()
