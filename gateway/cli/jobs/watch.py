"""`gridgate watch [JOB...]`: job state changes as they happen, from the gateway's event
stream (GET /api/v1/events), one line each (or one CloudEvent per line with --json)."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from gateway.cli import errors
from gateway.cli.jobs import ids as job_ids
from gateway.cli.state import state
from gateway.client.api import GatewayClient
from gateway.client.models import FINAL_STATES
from gateway.schemas.events import JobStateEvent

JobsArg = Annotated[list[str] | None, typer.Argument(
    metavar="[JOB]...", help="Jobs to watch (ids or unique starts); watching ends when "
    "every one has ended. None: every job you may read, until Ctrl-C.",
    callback=job_ids.resolve_many)]


def watch(
    ctx: typer.Context,
    jobs: JobsArg = None,
    json_out: Annotated[bool, typer.Option(
        "--json", help="Print each event as a CloudEvent, one JSON document a line.")] = False,
) -> None:
    """Print each state change of your jobs as it happens: TIME JOB STATE REASON.

    With JOBs it starts with each one's current state and ends once all have ended."""
    cli = state(ctx)
    named = list(jobs or [])
    open_jobs = set(named)
    with cli.client() as client:
        try:
            for event in client.stream_events(named or None,
                                               last_event_id=_start(client, named)):
                _print(event, json_out)
                if event["data"]["to"] in FINAL_STATES:
                    open_jobs.discard(event["subject"])
                    if named and not open_jobs:
                        return
        except KeyboardInterrupt:
            again = cli.command(" ".join(["watch", *named]))
            raise errors.Interrupted("Stopped watching; the jobs keep running. Watch again "
                                     f"with '{again}'.") from None


def _start(client: GatewayClient, named: list[str]) -> str | None:
    """For named jobs: just before the oldest of their latest events, so each job's
    current state comes first (and a job that has ended ends the watch at once)."""
    latest = [history[-1]["id"] for history in map(client.events, named) if history]
    return str(min(latest) - 1) if latest else None


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
