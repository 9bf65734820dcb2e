"""A `site: auto` job the worker has not routed yet has no site: the job list says why
it waits (REASON) and the job's details say it is being routed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table

from gateway.cli import render


def text(table: Table) -> str:
    console = Console(width=200, record=True, color_system=None)
    console.print(table)
    return console.export_text()


def job(**over: Any) -> dict[str, Any]:
    now = datetime(2026, 11, 24, 22, 0, tzinfo=UTC)
    return {"id": "7b0c", "name": "sim", "owner": "alice", "project": "~alice",
            "state": "ACCEPTED", "reason": None, "raw_state": None, "site": None,
            "exit_code": None, "cancel_requested": False, "created_at": now,
            "updated_at": now, "started_at": None, "ended_at": None, "labels": {},
            "spec": {"site": "auto"}, "attempts": [], **over}


def test_an_unrouted_job_shows_routing() -> None:
    assert "waiting for routing" in text(render.jobs_table([job()]))
    assert "(routing)" in text(render.job_details(job()))
    placed = text(render.jobs_table([job(site="galaxy")]))
    assert "galaxy" in placed and "routing" not in placed
    # A job that ended before any routing pass placed it (cancelled) has no site: '-'.
    assert "routing" not in text(render.jobs_table([job(state="CANCELLED")]))

