"""`gridgate submit --array/--dependency`, and job arrays in `list`, `show` and `cancel`
as a Slurm user expects them (issue 16), against a live gateway (SQLite and PostgreSQL,
its worker running): tasks shown and taken back as ARRAY_INDEX, an array's id (or a
unique start) cancels every unfinished task, dependencies take short ids."""

from __future__ import annotations

import json
import re

from gateway.cli import errors
from tests.cli.helpers import Cli
from tests.cli.test_cli_job_control import parked  # noqa: F401  (a fixture)


def submit_array(cli: Cli, spec: str, *args: str) -> str:
    return cli("submit", "-q", "--name", "sweep", "--site", "local", "--array", spec, *args,
               "--exe", "true").stdout.strip()


def test_an_array_is_listed_shown_and_cancelled_by_its_tasks_and_its_id(
        cli: Cli, parked: None) -> None:  # noqa: F811
    out = cli("submit", "--name", "sweep", "--site", "local", "--array", "0-3%2", "--exe",
              "true").stdout
    found = re.fullmatch(r"Submitted job array (\S+) \(4 tasks, ACCEPTED; task (\S+)_0 is "
                         r"job (\S+)\)\n", out)
    assert found is not None, out
    array_id, short, first = found.groups()
    assert short == array_id[:8]
    # Wide enough for every column (pytest-xdist's workers set COLUMNS=80).
    cli.env["COLUMNS"] = "200"
    rows = [line.split() for line in cli("list", "--array", short).stdout.splitlines()[1:]]
    assert sorted(row[0] for row in rows) == [f"{short}_{i}" for i in range(4)]
    shown = cli("show", f"{short}_0").stdout
    assert first in shown and f"0 of job array {array_id} ({short}_0)" in shown
    one = cli.json("cancel", f"{short}_3")
    assert (one["array_index"], one["state"]) == (3, "CANCELLED")
    table = cli("cancel", "--array", short).stdout
    assert f"Cancel requested for job array {array_id} (tasks now: 4 CANCELLED)" in table
    again = cli("cancel", short, "--json", code=errors.PROBLEM).stdout  # all ended: 409
    item = json.loads(again)["items"][0]
    assert (item["id"], item["ok"]) == (array_id, False)
    assert "nothing to cancel" in item["error"]["detail"]
    # An array's id written whole, with another array's start, in one command.
    other = submit_array(cli, "0-1")
    both = cli.json("cancel", other, first[:8], code=errors.PROBLEM)["items"]
    assert [(i["id"], i["ok"]) for i in both] == [(first, False), (other, True)]


def test_dependencies_take_short_ids_tasks_and_arrays(cli: Cli, parked: None) -> None:  # noqa: F811
    job_id = cli("submit", "-q", "--site", "local", "--exe", "true").stdout.strip()
    array_id = submit_array(cli, "0-2")
    waiting = cli.json("submit", "--site", "local", "--exe", "true", "--dependency",
                       f"afterok:{job_id[:8]}:{array_id[:8]}_1,afterany:{array_id[:8]}")
    task = cli.json("list", "--array", array_id)["items"]
    task_1 = next(t["id"] for t in task if t["array_index"] == 1)
    assert waiting["spec"]["depends_on"] == [
        {"job": job_id, "when": "afterok"}, {"job": task_1, "when": "afterok"},
        {"job": array_id, "when": "afterany"}]
    assert waiting["reason"].startswith("Dependency: waiting for job ")
    bad = cli("submit", "--exe", "true", "--dependency", f"after:{job_id}",
              code=errors.USAGE)
    assert "Slurm's 'after' is not supported" in bad.stderr
    unknown = cli("submit", "--exe", "true", "--dependency", "afterok:fffffff",
                  code=errors.NOT_FOUND)
    assert "No job or job array you can read has an id starting with 'fffffff'" in unknown.stderr
    refused = cli("submit", "--exe", "true", "--array", "0-3", "--wait", code=errors.USAGE)
    assert "--wait follows one job" in refused.stderr
