"""Pure parts of the CLI: building a job request from a file and flags; exit codes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gateway.cli import errors
from gateway.cli.jobs.spec import SpecFlags, build_spec, load_spec_file, pairs, parse_mpi
from gateway.cli.jobs.waiting import describe, job_exit_code
from gateway.client.errors import ClientError
from gateway.client.models import Job


def test_flags_alone_make_a_spec() -> None:
    spec = build_spec(None, SpecFlags(executable="/usr/bin/hostname", args=["-f"], ranks=4,
                                      nodes=2, walltime="01:00:00", mpi="mpirun:mpich",
                                      site="local", project="p1", env=["A=1", "B=x=y"],
                                      labels=["k=v"]))
    assert spec == {
        "name": "hostname", "executable": "/usr/bin/hostname", "args": ["-f"],
        "site": "local", "project": "p1",
        "resources": {"ranks": 4, "nodes": 2, "walltime": "01:00:00"},
        "mpi": {"launcher": "mpirun", "flavor": "mpich"},
        "environment": {"A": "1", "B": "x=y"}, "labels": {"k": "v"},
    }


def test_flags_override_and_merge_with_the_file() -> None:
    base: dict[str, Any] = {"name": "f", "script": "echo hi", "resources": {"ranks": 2},
                            "environment": {"A": "file"}, "labels": {"x": "1"}}
    spec = build_spec(base, SpecFlags(executable="python3", walltime="90", env=["A=flag"],
                                      labels=["y=2"]))
    assert "script" not in spec and spec["executable"] == "python3"
    assert spec["name"] == "f"
    assert spec["resources"] == {"ranks": 2, "walltime": 90}
    assert spec["environment"] == {"A": "flag"}
    assert spec["labels"] == {"x": "1", "y": "2"}
    assert base["resources"] == {"ranks": 2}  # the file's dict is not modified


def test_args_none_keeps_file_args_empty_list_clears_them() -> None:
    base = {"name": "n", "executable": "e", "args": ["a"]}
    assert build_spec(base, SpecFlags())["args"] == ["a"]
    assert build_spec(base, SpecFlags(args=[]))["args"] == []


@pytest.mark.parametrize(("value", "expected"), [
    ("mpirun", {"launcher": "mpirun"}),
    ("srun", {"launcher": "srun"}),
    ("none", {"launcher": "none"}),
    ("mpirun:openmpi", {"launcher": "mpirun", "flavor": "openmpi"}),
    ("mpich", {"launcher": "mpirun", "flavor": "mpich"}),
])
def test_parse_mpi(value: str, expected: dict[str, str]) -> None:
    assert parse_mpi(value) == expected


def test_parse_mpi_rejects_unknown_launcher_with_flavor() -> None:
    with pytest.raises(ClientError, match="launcher"):
        parse_mpi("aprun:cray")


def test_pairs() -> None:
    assert pairs(["a=1", "b=", "c=d=e"], "--env") == {"a": "1", "b": "", "c": "d=e"}
    for bad in ("novalue", "=x"):
        with pytest.raises(ClientError, match="KEY=VALUE"):
            pairs([bad], "--env")


def test_load_spec_file_formats(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("name: a\nexecutable: e\n")
    (tmp_path / "b.json").write_text('{"name": "b", "executable": "e"}')
    (tmp_path / "c.yml").write_text("- not a mapping\n")
    assert load_spec_file(tmp_path / "a.yaml")["name"] == "a"
    assert load_spec_file(tmp_path / "b.json")["name"] == "b"
    with pytest.raises(ClientError, match="mapping"):
        load_spec_file(tmp_path / "c.yml")
    with pytest.raises(ClientError, match="Cannot read"):
        load_spec_file(tmp_path / "missing.yaml")
    (tmp_path / "d.json").write_text("{")
    with pytest.raises(ClientError, match="not valid JSON"):
        load_spec_file(tmp_path / "d.json")


def job(state: str, exit_code: int | None = None, reason: str | None = None) -> Job:
    return {"id": "j", "name": "n", "owner": "o", "project": "p", "state": state,
            "reason": reason, "raw_state": None, "site": "local",
            "exit_code": exit_code, "cancel_requested": False, "created_at": "",
            "updated_at": "", "started_at": None, "ended_at": None, "labels": {},
            "spec": {}}


@pytest.mark.parametrize(("state", "exit_code", "expected"), [
    ("COMPLETED", 0, errors.OK),
    ("COMPLETED", None, errors.OK),
    ("FAILED", 3, 3),
    ("FAILED", 255, 255),
    ("FAILED", 0, errors.FAILURE),       # e.g. TIMEOUT with a clean exit
    ("FAILED", None, errors.FAILURE),    # e.g. rejected at submission
    ("FAILED", -9, 137),                 # killed by SIGKILL
    ("FAILED", 256, errors.FAILURE),     # does not fit in an exit status
    ("CANCELLED", None, errors.CANCELLED),
    ("CANCELLED", -15, errors.CANCELLED),
    ("RUNNING", None, errors.TIMEOUT),
])
def test_job_exit_code(state: str, exit_code: int | None, expected: int) -> None:
    assert job_exit_code(job(state, exit_code)) == expected


def test_describe() -> None:
    assert describe(job("FAILED", 3, "NonZeroExitCode")) == "FAILED (exit 3): NonZeroExitCode"
    assert describe(job("RUNNING", None)) == "RUNNING"


def test_exit_codes_are_distinct() -> None:
    codes = [errors.OK, errors.FAILURE, errors.USAGE, errors.UNREACHABLE, errors.AUTH,
             errors.PROBLEM, errors.NOT_FOUND, errors.TIMEOUT, errors.CANCELLED,
             errors.INTERRUPTED]
    assert len(set(codes)) == len(codes)


def test_mail_flags_go_into_notify() -> None:
    base: dict[str, Any] = {"name": "f", "executable": "true",
                            "notify": {"mail": ["end"], "to": "ada@example.org"}}
    spec = build_spec(base, SpecFlags(mail_type="BEGIN, Fail"))
    assert spec["notify"] == {"mail": ["begin", "fail"], "to": "ada@example.org"}
    spec = build_spec(None, SpecFlags(executable="true", mail_type="NONE",
                                      mail_user="ada@lab.example"))
    assert spec["notify"] == {"mail": [], "to": "ada@lab.example"}
    assert "notify" not in build_spec(None, SpecFlags(executable="true"))
