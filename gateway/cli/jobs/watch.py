"""`gridgate watch [JOB...]`: job state changes as they happen, from the gateway's event
stream (GET /api/v1/events): on a terminal a table of the jobs redrawn on each change
(gateway.cli.jobs.watch_table; it also reads the jobs' placements and predicted starts);
else one line each, or one CloudEvent per line with --json (state changes only: scripts
read these, keep them as they are)."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from typing import Annotated, cast

import typer

from gateway.cli import errors
from gateway.cli.jobs import ids as job_ids
from gateway.cli.jobs.watch_table import JobEvent, LiveTable
from gateway.cli.state import state
from gateway.client.api import GatewayClient
from gateway.client.errors import ReplayGone
from gateway.client.models import FINAL_STATES
from gateway.schemas.events import (
    JOB_PLACEMENT_TYPE,
    JOB_PREDICTION_TYPE,
    JOB_STATE_TYPE,
    JobStateEvent,
    job_state_event,
)

Show = Callable[[JobEvent], None]

JobsArg = Annotated[list[str] | None, typer.Argument(
    metavar="[JOB]...", help="Jobs to watch (ids or unique starts); watching ends when "
    "every one has ended. None: every job you may read, until Ctrl-C.",
    callback=job_ids.resolve_many)]


def watch(
    ctx: typer.Context,
    jobs: JobsArg = None,
    project: Annotated[str | None, typer.Option(
        "--project", "-p", help="Only jobs of this project.")] = None,
    workflow: Annotated[str | None, typer.Option(
        "--workflow", "-w", help="Only the jobs of this workflow's steps.")] = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print each event as a CloudEvent, one JSON document a line.")] = False,
) -> None:
    """Show each state change of your jobs as it happens: on a terminal, a table of the
    jobs (ID NAME STATE SITE START REASON; START is '~' and the predicted time while a
    job waits) redrawn in place; else a line each, TIME JOB STATE REASON.

    With JOBs it starts with each one's current state and ends once all have ended."""
    cli = state(ctx)
    sink, types = _sink(json_out)
    show = _shown_once(sink)
    named = list(jobs or [])
    open_jobs = set(named)
    with cli.client() as client:
        try:
            # Each named job's current state first (a job that has ended ends the watch
            # at once), then what comes after the newest of them.
            start = None
            for job_id in named:
                latest = _latest(client, job_id)
                if latest is not None:
                    show(latest)
                    start = max(start or 0, int(latest["id"]))
                    if latest["data"]["to"] in FINAL_STATES:
                        open_jobs.discard(job_id)
            if named and not open_jobs:
                return
            last = None if start is None else str(start)
            while True:
                try:
                    _follow(client, named, last, open_jobs, show, types, project,
                            workflow)
                    return
                except ReplayGone as gone:  # nothing newer for a week: go on from now
                    last = gone.last_event_id
        except KeyboardInterrupt:
            again = cli.command(" ".join(["watch", *named]))
            raise errors.Interrupted("Stopped watching; the jobs keep running. Watch again "
                                     f"with '{again}'.") from None


def _sink(json_out: bool) -> tuple[Show, list[str]]:
    """How each event is shown, and the event types it shows: the live table for a person
    at a terminal (with each job's placement and predicted starts), else lines."""
    if not json_out and sys.stdout.isatty():
        table = LiveTable(shutil.get_terminal_size().columns)
        return table.show, [JOB_STATE_TYPE, JOB_PLACEMENT_TYPE, JOB_PREDICTION_TYPE]
    return lambda event: _print(cast(JobStateEvent, event), json_out), [JOB_STATE_TYPE]


def _shown_once(show: Show) -> Show:
    """`show`, passed each job's events in order, once: an event no later than one shown
    of its job is dropped (a resumed stream sends the last seconds again; one job's
    events commit in id order)."""
    newest: dict[str, int] = {}

    def once(event: JobEvent) -> None:
        event_id = int(event["id"])
        if event_id > newest.get(event["subject"], 0):
            newest[event["subject"]] = event_id
            show(event)
    return once


def _follow(client: GatewayClient, named: list[str], last: str | None, open_jobs: set[str],
            show: Show, types: list[str], project: str | None,
            workflow: str | None) -> None:
    """Show the stream's events (of `types`) until every named job has ended."""
    for streamed in client.stream_events(named or None, types, last_event_id=last,
                                         project=project, workflow=workflow):
        event = cast(JobEvent, streamed)
        show(event)
        if event["type"] == JOB_STATE_TYPE and event["data"]["to"] in FINAL_STATES:
            open_jobs.discard(event["subject"])
            if named and not open_jobs:
                return


def _latest(client: GatewayClient, job_id: str) -> JobStateEvent | None:
    """The job's latest state change as the stream would have sent it."""
    history = client.events(job_id)
    if not history:
        return None
    last, job = history[-1], client.get_job(job_id)
    return job_state_event(last["id"], client.base_url, last["at"], {
        "from": last["from_state"], "to": last["to_state"], "reason": last["reason"],
        "raw_state": last["raw_state"], "actor": last["actor"],
        "job": {"id": job_id, "name": job["name"], "site": job["site"],
                "project": job["project"]}})


def _print(event: JobStateEvent, json_out: bool) -> None:
    if json_out:
        line = json.dumps(event, separators=(",", ":"), ensure_ascii=False)
    else:
        data = event["data"]
        line = " ".join(part for part in (event["time"][:19].replace("T", " "),
                                          event["subject"][:8], data["to"],
                                          data["reason"] or "") if part)
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
