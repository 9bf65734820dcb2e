"""`gridgate estimate` and `gridgate explain` against a live gateway (its local site and
worker, SQLite and PostgreSQL): a row per site, the decision's reason, `--json` as the
API sends it, and a job not placed yet as a not-found problem."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from sqlalchemy import update

from gateway.cli import errors
from gateway.db.engine import transaction
from gateway.db.models import Site
from tests.cli.helpers import Cli
from tests.client.live import LiveGateway

SPEC = {"name": "est", "executable": "/bin/true",
        "resources": {"ranks": 1, "walltime": "01:00:00"}}


def spec_file(tmp_path: Path, **over: object) -> str:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump({**SPEC, **over}))
    return str(path)


def drained(gateway: LiveGateway, value: bool) -> None:
    with transaction(gateway.runtime.sessions) as session:
        session.execute(update(Site).where(Site.name == "local").values(drained=value))


def test_estimate_prints_a_row_per_site_and_the_reason(cli: Cli, tmp_path: Path) -> None:
    cli.env["COLUMNS"] = "80"  # as under pytest-xdist's workers; unlimited when piped
    path = spec_file(tmp_path)
    out = cli("estimate", path).stdout
    lines = out.splitlines()
    assert lines[0].startswith("Estimate at ") and "(policy fastest)" in lines[0]
    # At 80 columns the last heading wraps above the others: the header row names SITE.
    header = next(line.split() for line in lines if line.startswith("SITE"))
    assert header[:7] == ["SITE", "STATUS", "LIKELY", "WAIT", "WAIT", "95%", "RUN"]
    row = next(line.split() for line in lines if line.startswith("local"))
    # No history: the likely wait is the live queue's (an idle site: now); the run time is
    # unknown (issue 28: never 0), and routing counted the time limit, one hour.
    assert row[:3] == ["local", "chosen", "0s"] and row[5] == "unknown", out
    assert "1h00m" in row[6:8], out  # COMPLETION (STAGING is left out at 80 columns)
    document = cli.json("estimate", path)
    assert lines[-1] == document["why"] and document["chosen"] == ["local"]
    (candidate,) = document["candidates"]
    forecast = candidate["forecast"]
    assert candidate["site"] == "local" and forecast["runtime"] is None
    assert forecast["basis"].endswith("run time: time limit (no earlier runs)")
    assert forecast["completion"] == forecast["staging"] + forecast["wait_median"] + 3600
    # Flags override the file, as for `gridgate submit`.
    shorter = cli.json("estimate", path, "--walltime", "600")["candidates"][0]["forecast"]
    assert shorter["completion"] == shorter["staging"] + shorter["wait_median"] + 600


def test_estimate_uploads_local_inputs_as_submit_does(cli: Cli, tmp_path: Path) -> None:
    # Issue 28: a spec whose input is a file next to it (examples/pingpong/job.yaml's
    # shape) was refused with 422; estimate uploads it as submit does, and submits nothing.
    (tmp_path / "data.txt").write_bytes(b"x" * 5000)
    path = spec_file(tmp_path, inputs=[{"source": "./data.txt"}])
    result = cli("estimate", path, "--json")
    assert json.loads(result.stdout)["chosen"] == ["local"]
    assert "Input data.txt: " in result.stderr and " is upload " in result.stderr
    assert cli.json("list")["items"] == []
    # A later submit of the same spec uses the same upload again.
    upload_id = result.stderr.split(" is upload ")[1].split()[0]
    submitted = cli("submit", path, "--quiet")
    assert f" is upload {upload_id}" in submitted.stderr
    job = cli.json("show", submitted.stdout.strip())
    assert job["spec"]["inputs"][0]["source"] == f"upload:{upload_id}"
    # A missing file is named before anything is sent.
    missing = cli("estimate", spec_file(tmp_path, inputs=[{"source": "./nope.txt"}]),
                  code=errors.FAILURE)
    assert "inputs[0].source './nope.txt': there is no file" in missing.stderr


def test_estimate_says_unknown_until_the_program_ran(cli: Cli, tmp_path: Path) -> None:
    # Issue 28: another program's runs (here `/bin/true`, about 0 s) rank the job, but
    # its own run time is unknown, not 0.
    cli.env["COLUMNS"] = "80"
    cli("submit", spec_file(tmp_path), "--wait", "--quiet")
    other = spec_file(tmp_path, executable="/bin/sh", args=["-c", "exit 0"])
    forecast = cli.json("estimate", other)["candidates"][0]["forecast"]
    assert forecast["runtime"] is None
    row = next(line.split() for line in cli("estimate", other).stdout.splitlines()
               if line.startswith("local"))
    assert row[5] == "unknown"


def test_estimate_problems(cli: Cli, tmp_path: Path) -> None:
    too_big = cli("estimate", spec_file(tmp_path, resources={"ranks": 100000}),
                  code=errors.PROBLEM)
    assert too_big.stderr.startswith("error: No site can run this job")
    missing = cli("estimate", str(tmp_path / "nope.yaml"), code=errors.FAILURE)
    assert "Cannot read the job spec" in missing.stderr


def test_explain_a_routed_job_and_one_not_placed_yet(
        cli: Cli, gateway: LiveGateway, tmp_path: Path) -> None:
    drained(gateway, True)
    try:
        job_id = cli("submit", spec_file(tmp_path), "--quiet").stdout.strip()
        waiting = cli("explain", job_id, code=errors.NOT_FOUND)
        assert waiting.stderr.startswith(f"error: Job {job_id} has not been placed yet")
        assert "jobs:estimate" in waiting.stderr
    finally:
        drained(gateway, False)
    cli("wait", job_id, "--timeout", "60")
    out = cli("explain", job_id).stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"Job {job_id} placed at ") and "(policy fastest)" in lines[0]
    assert next(line for line in lines if line.startswith("local")).split()[1] == "chosen"
    document = json.loads(cli("explain", job_id, "--json").stdout)
    assert document["job_id"] == job_id and document["chosen"] == ["local"]
    assert lines[-1] == document["why"]
    cli("explain", "no-such-job", code=errors.NOT_FOUND)
    # A job naming its site is pinned there: its placement says so.
    pinned = cli("submit", spec_file(tmp_path), "--site", "local", "--quiet").stdout.strip()
    assert cli("explain", pinned).stdout.splitlines()[0].endswith("(policy pinned):")
    assert cli.json("explain", pinned)["chosen"] == ["local"]


def test_sites_show_live_load_once_a_routing_pass_took_a_snapshot(
        cli: Cli, tmp_path: Path) -> None:
    job_id = cli("submit", spec_file(tmp_path), "--quiet").stdout.strip()
    cli("wait", job_id, "--timeout", "60")
    (local,) = cli.json("sites")["items"]
    load = local["load"]
    assert load["taken_at"] and load["total_cores"] >= 1
    assert {"queued_jobs", "running_jobs", "free_cores"} <= set(load)
    assert (load["probe"]["nodes"], load["probe"]["walltime"]) == (1, 3600)
    lines = [line.rstrip() for line in cli("sites").stdout.splitlines()]
    at = lines.index("Load (waits: a 1-node, 1-hour job)")
    assert lines[at + 1].split() == ["NAME", "QUEUED", "RUNNING", "FREE", "CORES", "WAIT",
                                     "WAIT", "95%", "SNAPSHOT"]
    row = lines[at + 2].split()
    assert row[:4] == ["local", str(load["queued_jobs"]), str(load["running_jobs"]),
                       f"{load['free_cores']}/{load['total_cores']}"]
    assert row[-1] == "ago"
