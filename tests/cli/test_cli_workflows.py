"""`gridgate workflow submit|list|show|graph|cancel|events` against a live gateway (SQLite
and PostgreSQL, its worker running): tables for people, `--json` for scripts, short ids,
the DAG drawn with each step's state."""

from __future__ import annotations

import json
from pathlib import Path

from gateway.cli import errors
from tests.cli.helpers import Cli
from tests.waiting_jobs import waits

SPEC = """\
name: cli-sweep
steps:
  make:
    job: {executable: /bin/sh, args: ["-c", "echo 21 > n.txt"], outputs: [n.txt],
          site: local}
  double:
    matrix: {k: [2, 3]}
    inputs: [{from: "make:outputs/n.txt", dest: n.txt}]
    job: {executable: /bin/sh, args: ["-c", "echo $(( $(cat n.txt) * K )) > r.txt"],
          environment: {K: "${{ matrix.k }}"}, outputs: [r.txt], site: local}
"""


def test_submit_wait_show_graph_and_list(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "wf.yaml"
    spec.write_text(SPEC)
    done = cli.json("workflow", "submit", str(spec), "--wait", "--json")
    assert done["state"] == "completed", done
    assert [(s["instance"], s["state"]) for s in done["steps"]] == [
        ("make", "completed"), ("double[0]", "completed"), ("double[1]", "completed")]
    short = done["id"][:8]
    cli.env["COLUMNS"] = "200"
    shown = cli("workflow", "show", short).stdout
    assert f"Workflow {done['id']}  cli-sweep  COMPLETED" in shown
    assert "double[1]" in shown and "k=3" in shown
    drawn = cli("workflow", "graph", short).stdout.splitlines()
    assert drawn[0] == "cli-sweep  completed  (3 completed)"
    assert drawn[1].startswith("✔ make") and drawn[2] == "│"
    assert drawn[3].startswith("├─ ✔ double[0]  k=2") and drawn[4].startswith("└─ ✔ double[1]")
    nodes = cli.json("workflow", "graph", short, "--json")["nodes"]
    assert nodes[2] == {"instance": "double[1]", "state": "completed", "needs": ["make"]}
    listed = cli("workflow", "list").stdout
    assert short in listed and "3 completed" in listed
    assert cli.json("workflow", "list", "--json")["items"][0]["id"] == done["id"]
    events = cli.json("workflow", "events", short, "--json")["items"]
    assert events[-1]["state"] == "completed"
    job = cli.json("show", done["steps"][2]["job_id"], "--json")
    assert job["state"] == "COMPLETED"


def test_cancel_and_problems(cli: Cli, tmp_path: Path) -> None:
    spec = tmp_path / "slow.json"
    spec.write_text(json.dumps({"name": "slow", "steps": {
        # Never let go (tests/waiting_jobs.py): it runs until the cancel.
        "wait": {"job": {"executable": "/bin/sh", "args": ["-c", waits()], "site": "local"}},
        "after": {"needs": ["wait"], "job": {"executable": "/bin/true", "site": "local"}}}}))
    created = cli.json("workflow", "submit", str(spec), "--json")
    out = cli("workflow", "cancel", created["id"][:8]).stdout
    assert out.startswith(f"Cancel requested for workflow {created['id']}")
    again = cli("workflow", "cancel", created["id"], code=None)
    assert again.exit_code in (0, errors.PROBLEM)
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nsteps:\n  a: {needs: [b], job: {executable: /bin/true}}\n")
    refused = cli("workflow", "submit", str(bad), code=errors.PROBLEM)
    assert "steps.a.needs[0]: there is no step b" in refused.stderr
    missing = cli("workflow", "show", "0000000", code=errors.NOT_FOUND)
    assert "No workflow of yours" in missing.stderr
