"""The workflow guide's example (docs/researchers/workflows.md) runs as written: the spec shown is
examples/workflow/workflow.yaml, it completes on the local site with the gathered output
right, and `gridgate workflow graph` draws it as the guide shows (SQLite and
PostgreSQL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from fastapi.testclient import TestClient

from gateway.cli.workflows.graph import graph
from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.worker.test_workflows import output, run_workflow, steps, submit

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "researchers" / "workflows.md"
EXAMPLE = ROOT / "examples" / "workflow" / "workflow.yaml"


def _block(opening: str) -> str:
    """The guide's code block that opens with `opening` (a fence and a first line)."""
    text = GUIDE.read_text()
    start = text.index(opening) + len(opening.split("\n")[0]) + 1
    return text[start:text.index("```\n", start)]


def test_the_readme_spec_is_the_example_file() -> None:
    shown = yaml.safe_load(_block("```yaml\nname: mesh-solve-gather"))
    assert shown == yaml.safe_load(EXAMPLE.read_text())


def test_the_example_runs_and_is_drawn_as_shown(client: TestClient, runtime: Runtime,
                                                make_user: MakeUser) -> None:
    user = make_user()
    spec: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    created = submit(client, user.headers, spec)
    done = run_workflow(Worker(runtime), client, user.headers, created["id"])
    assert done["state"] == "completed", done
    gathered = output(client, user.headers, steps(done)["gather"]["job_id"], "all.txt")
    assert gathered == ("grid 64x64 ranks=1\ngrid 64x64 ranks=2\ngrid 64x64 ranks=4\n")
    drawn = "\n".join(line.plain.rstrip() for line in graph(done)) + "\n"
    shown = _block("```\nmesh-solve-gather  completed")
    assert drawn == shown, drawn
