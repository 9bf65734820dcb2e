"""Tables at 80 columns (issue 28, item 8): one width rule leaves out the least important
columns instead of cutting headers or ids, free text ends in an ellipsis or wraps, and
piped output is whole. Also: a job's REASON and TIME, CREATED with a date when not today
(item 7), and a workflow's step states as text, never raw markup (item 6)."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from rich.console import Console

from gateway.cli import render
from gateway.cli.columns import Col, Grid, choose
from gateway.cli.reports import _allocations
from gateway.cli.routing import candidates_table
from gateway.cli.workflows.commands import _steps_table
from tests.cli.test_render_routing import decision

NOW = datetime(2026, 11, 24, 22, 0, tzinfo=UTC)
JOB_ID = "7b0c1234-aaaa-4bbb-8ccc-1234567890ab"


def shown(renderable: Any, width: int = 80) -> list[str]:
    console = Console(width=width, record=True, color_system=None)
    console.print(renderable)
    return console.export_text().splitlines()


def words_whole(lines: list[str], *words: str) -> None:
    """Each word appears whole, and no line is wider than the terminal."""
    text = "\n".join(lines)
    for word in words:
        assert word in text, f"{word!r} cut or missing:\n{text}"
    assert max(len(line.rstrip()) for line in lines) <= 80, text


def job(**over: Any) -> dict[str, Any]:
    return {"id": JOB_ID, "name": "a-rather-long-simulation-name-" * 3, "owner": "alice",
            "project": "~alice", "state": "ACCEPTED", "reason": None, "raw_state": None,
            "site": None, "exit_code": None, "cancel_requested": False, "held": False,
            "created_at": NOW - timedelta(days=2), "updated_at": NOW, "started_at": None,
            "ended_at": None, "labels": {}, "spec": {"site": "auto"}, "attempts": [],
            "array_job_id": None, **over}


JOBS = [
    job(),
    job(held=True, reason="held by alice; release it to let it run"),
    job(state="QUEUED", site="roadrunner",
        reason="Dependency: waiting for job 1234abcd-0000-4000-8000-000000000000 (RUNNING)"),
    job(state="RUNNING", site="galaxy", started_at=NOW - timedelta(minutes=5),
        created_at=NOW - timedelta(minutes=30)),
    job(state="FAILED", site="galaxy", exit_code=3, reason="NonZeroExitCode",
        started_at=NOW - timedelta(seconds=95), ended_at=NOW - timedelta(seconds=5)),
]


def test_the_width_rule_leaves_out_the_highest_rank_first() -> None:
    columns = [Col("ID"), Col("A", drop=1), Col("B", drop=2), Col("WHY", text=True)]
    natural = [8, 10, 10, 40]
    assert choose(columns, natural, 200) == [0, 1, 2, 3]
    # 8 + 10 + 10 + 12 (the reason's least) + 3 gaps of 2 = 46.
    assert choose(columns, natural, 46) == [0, 1, 2, 3]
    assert choose(columns, natural, 45) == [0, 1, 3]
    assert choose(columns, natural, 30) == [0, 3]
    assert choose(columns, natural, 5) == [0, 3], "never-dropped columns stay"


def test_a_grid_refuses_a_row_of_the_wrong_length() -> None:
    with pytest.raises(ValueError, match="2 cells for 1 columns"):
        Grid([Col("ID")]).add_row("a", "b")


def test_jobs_at_80_columns_keep_ids_states_and_reasons() -> None:
    lines = shown(render.jobs_table(JOBS, NOW))
    assert lines[0].split() == ["ID", "NAME", "STATE", "SITE", "TIME", "REASON"]
    words_whole(lines, "7b0c1234", "ACCEPTED", "HELD", "roadrunner", "waiting for routing",
                "NonZeroExitCode")
    assert "…" in lines[1], "a long name ends in an ellipsis"
    assert lines[-1] == "(left out at 80 columns: EXIT, PROJECT, CREATED; --json has everything)"
    # TIME: run time once started; before that, the wait so far in parentheses.
    assert "(2d00h)" in lines[1] and " 5m " in lines[4] and " 1m30s " in lines[5]


def test_jobs_when_wide_show_every_column_and_whole_text() -> None:
    lines = shown(render.jobs_table(JOBS, NOW), width=300)
    assert lines[0].split() == ["ID", "NAME", "STATE", "SITE", "EXIT", "PROJECT", "CREATED",
                                "TIME", "REASON"]
    assert "Dependency: waiting for job 1234abcd-0000-4000-8000-000000000000 (RUNNING)" \
        in lines[3]
    assert "held by alice; release it to let it run" in lines[2]
    assert lines[4].split()[2] == "RUNNING" and lines[4].split()[-1] == "-", \
        "a running job has no waiting reason"
    assert "left out" not in "\n".join(lines)


def test_created_shows_a_date_unless_today() -> None:
    today = NOW.astimezone()
    assert render.short_when(NOW, NOW) == today.strftime("%H:%M:%S")
    assert render.short_when(NOW - timedelta(days=2), NOW) == \
        (today - timedelta(days=2)).strftime("%m-%d %H:%M")
    assert render.short_when(NOW - timedelta(days=400), NOW) == \
        (today - timedelta(days=400)).strftime("%Y-%m-%d %H:%M")


@pytest.mark.parametrize(("over", "reason"), [
    ({}, "waiting for routing"),
    ({"site": "galaxy"}, "being submitted"),
    ({"held": True}, "Held"),
    ({"held": True, "reason": "held by bob; release it to let it run"},
     "held by bob; release it to let it run"),
    ({"state": "QUEUED", "site": "galaxy", "reason": "Priority"}, "Priority"),
    ({"state": "RUNNING", "site": "galaxy", "reason": "released by bob"}, "-"),
    ({"state": "CANCELLED", "reason": "cancelled by user"}, "cancelled by user"),
])
def test_a_jobs_reason(over: dict[str, Any], reason: str) -> None:
    assert render.job_reason(job(**over)) == reason  # type: ignore[arg-type]


def test_estimate_at_80_columns_keeps_sites_and_wraps_the_reason() -> None:
    d = decision()
    d["candidates"][2]["site"] = "a-site-with-a-long-name"
    lines = shown(candidates_table(d))
    assert lines[0].split() == ["SITE", "STATUS", "WAIT", "COMPLETION", "BASIS", "/",
                                "REASON"]
    words_whole(lines, "a-site-with-a-long-name", "roadrunner", "candidate", "excluded")
    # The reason wraps, whole, rather than being cut.
    assert " ".join(" ".join(lines[3:5]).split()).endswith(
        "needs 128 cores on one node; local has 2")
    assert " ".join(lines[-2:]).startswith(
        "(left out at 80 columns: LIKELY, IF LATER, WAIT 95%, RUN, STAGING;")
    # A shorter site name leaves room for the likely wait and the 95% bound.
    assert shown(candidates_table(decision()))[0].split()[:5] == [
        "SITE", "STATUS", "LIKELY", "WAIT", "WAIT"]


def test_events_at_80_columns_keep_actor_ids_whole() -> None:
    actor = "svc-9f0e8d7c-6b5a-4321-8fed-cba987654321"
    events: Any = [{"at": NOW, "from_state": "QUEUED", "to_state": "RUNNING", "actor": actor,
                    "raw_state": "R", "reason": "the scheduler started it " * 4}]
    lines = shown(render.events_table(events))
    assert lines[0].split() == ["AT", "TO", "ACTOR", "REASON"]
    words_whole(lines, actor, "RUNNING")


def test_sites_at_80_columns() -> None:
    site: Any = {"name": "roadrunner-cluster", "kind": "slurm", "state": "down",
                 "reason": "ssh: connection refused by login.example.org:22",
                 "enabled": True, "drained": False, "max_nodes": 128, "cores_per_node": 64,
                 "isolation": "none", "description": "The big Slurm cluster " * 5,
                 "load": None, "routing_ban": "3 jobs of 2 users failed in a row " * 3}
    lines = shown(render.sites_table([site]))
    words_whole(lines, "roadrunner-cluster", "NAME", "STATE", "DESCRIPTION")
    header = lines[0].split()
    assert "CORES/NODE" not in header and "DESCRIPTION" in header
    # Long free text: the description cut with an ellipsis, the reasons on lines of
    # their own (wrapped at the terminal's width, never squeezed into a cell).
    assert "…" in lines[1]
    rest = " ".join(" ".join(lines[2:]).split())
    assert "roadrunner-cluster is down: ssh: connection refused by login.example.org:22" in rest
    assert ("roadrunner-cluster is out of routing: " + "3 jobs of 2 users failed in a row " * 3
            ).strip() in rest


def test_report_allocations_at_80_columns_cuts_no_header(
        monkeypatch: pytest.MonkeyPatch) -> None:
    row = {"id": 12, "project": "climate-2026", "pool": "*", "status": "active",
           "awarded_su": 1_000_000.0, "used_su": 123_456.789, "held_su": 1_000.0,
           "remaining_su": 875_543.211, "burn_su_per_day": 4_115.226,
           "exhausts_at": NOW + timedelta(days=200), "exhausts_before_end": True,
           "ends_at": NOW + timedelta(days=100)}
    out = io.StringIO()
    console = Console(file=out, width=80, color_system=None)
    monkeypatch.setattr(render, "stdout_console", lambda: console)
    _allocations({"allocations": [row]})
    lines = out.getvalue().splitlines()
    header = lines[0].split()
    assert "..." not in out.getvalue() and "…" not in lines[0]
    assert {"ID", "PROJECT", "STATUS", "REMAINING", "RUNS", "OUT"} <= set(header)
    words_whole(lines, "climate-2026", "875,543.211")


def test_workflow_steps_show_states_as_text() -> None:
    workflow: Any = {"steps": [
        {"instance": "mesh", "matrix": None, "state": "completed", "job_id": JOB_ID,
         "job_state": "COMPLETED", "site": "local", "needs": [], "reason": None},
        {"instance": "solve[0]", "matrix": "n=1", "state": "pending", "job_id": None,
         "job_state": None, "site": None, "needs": ["mesh"],
         "reason": "Dependency: waiting for the steps of its workflow it needs"}]}
    lines = shown(_steps_table(workflow))
    assert "[" not in lines[1] and "✔ completed" in lines[1]
    assert "○ pending" in lines[2]
    words_whole(lines, "7b0c1234", "solve[0]")


def test_piped_output_is_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.delenv("COLUMNS", raising=False)
    render.stdout_console().print(render.jobs_table(JOBS, NOW))
    text = out.getvalue()
    assert "\x1b[" not in text, "no styles when piped"
    assert JOBS[0]["name"] in text and "EXIT" in text and "left out" not in text
    monkeypatch.setenv("COLUMNS", "80")
    assert render.stdout_console().width == 80
