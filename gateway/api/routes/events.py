"""GET /api/v1/events: what happened (job states and placements, site states, allocation
usage and status) as Server-Sent Events, each a CloudEvent.

The events come from the `events` table, the transactional outbox every pushed fact is
written to; gateway.services.events.feed reads it without losing late commits.
New events reach a stream through this process's hub (gateway.api.http.event_hub: one
reader for every stream, woken by the commit); a stream resumed with Last-Event-ID first
replays the log itself. Like an output follow (job_logs.py), a stream waits on the event
loop holding no thread, reads on the streams' own small thread pool, and takes a stream
slot (caps per user and per process: 429 / 503 beyond).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import APIRouter, Header, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from gateway.api.deps import JobsReader, RuntimeDep
from gateway.api.http import stopping
from gateway.api.http.event_hub import Subscription, read_messages
from gateway.api.http.follows import SlotResponse, follows, refused
from gateway.api.http.stream_slots import SlotRefused
from gateway.api.problem_types import BY_NAME
from gateway.db.base import utcnow
from gateway.domain.errors import Invalid
from gateway.domain.principal import Principal
from gateway.repositories.events.feed import FeedFilter
from gateway.runtime import Runtime
from gateway.schemas.events import EVENT_DOCUMENTS, STREAM_GONE
from gateway.services.events import feed as event_feed
from gateway.services.events.feed import FeedCursor
from gateway.services.workflows import queries as workflow_queries

router = APIRouter(prefix="/api/v1", tags=["events"])

EVENT_ID = re.compile(r"[0-9]{1,18}")
# How long a client's EventSource waits before it reconnects (the SSE `retry` field).
RECONNECT_MILLISECONDS = 2000
HEARTBEAT = b": heartbeat\n\n"
# A stream with nothing to send sleeps until its heartbeat: a client that leaves ends
# it through the response (follows.SlotResponse), a stopping server wakes it (hub.wake_all).


def _filter(runtime: Runtime, principal: Principal, job: list[str], types: list[str],
            project: str | None, workflow: str | None) -> FeedFilter:
    with runtime.reading() as conn:
        if workflow is not None:
            workflow_queries.visible(conn, principal, workflow)
        return event_feed.feed_filter(conn, principal, job, types, project, workflow)


def _replay_from(runtime: Runtime, where: FeedFilter, last_event_id: int) -> FeedCursor:
    with runtime.reading() as conn:
        return FeedCursor.start(conn, where, last_event_id,
                                runtime.settings.events_late_commit_seconds)


def _gone(runtime: Runtime, last_event_id: int) -> int | None:
    with runtime.reading() as conn:
        return event_feed.replay_gone(conn, last_event_id,
                                      runtime.settings.events_replay_hours * 3600, utcnow())


def _gone_message(last_event_id: int, top: int, hours: float) -> bytes:
    """The first message of a stream resumed beyond the replay window: a problem
    document, with the id the stream goes on from (where a reconnect resumes)."""
    kind = BY_NAME["replay-window"]
    data = json.dumps({
        "type": kind.uri, "title": "Gone", "status": kind.status,
        "detail": f"Events after id {last_event_id} are older than this gateway replays "
                  f"({hours:g} h). Re-read the state of your jobs (GET /api/v1/jobs); "
                  f"this stream goes on with the events after id {top}.",
        "last_event_id": str(top)}, separators=(",", ":"))
    return f"id: {top}\nevent: {STREAM_GONE}\ndata: {data}\n\n".encode()


def _resume_from(header: str | None, query: str | None) -> int | None:
    given = header if header is not None else query
    if given is None or given == "":
        return None
    if not EVENT_ID.fullmatch(given.strip()):
        raise Invalid(f"'{given[:40]}' is not an event id; give the `id` of the last event "
                      "received (digits), or none to start with new events.",
                      field="last_event_id")
    return int(given.strip())


@router.get("/events", response_class=Response,
            responses={200: {"description": "Server-Sent Events, each message a CloudEvent "
                                            "in its `data` field, its type in `event`",
                             "content": {"text/event-stream": {"schema": {"oneOf": [
                                 {"$ref": f"#/components/schemas/{document.__name__}"}
                                 for document in EVENT_DOCUMENTS]}}}},
                       429: {"description": "Too many streams of this user (Retry-After)"}})
async def stream_events(
    principal: JobsReader,
    runtime: RuntimeDep,
    request: Request,
    job: Annotated[list[str], Query(max_length=100)] = [],  # noqa: B006 (FastAPI copies it)
    type: Annotated[list[str], Query(max_length=16)] = [],  # noqa: B006
    project: Annotated[str | None, Query(max_length=64)] = None,
    workflow: Annotated[str | None, Query(max_length=64)] = None,
    last_event_id: Annotated[str | None, Query(max_length=40)] = None,
    last_event_id_header: Annotated[str | None, Header(alias="Last-Event-ID",
                                                       max_length=40)] = None,
) -> Response:
    """The events you may read: your jobs' states and placements; the usage and status of
    the allocations of projects you are PI of; with the admin or auditor role, every
    event, sites' states too (`job`: only these jobs'; `project`: only that project's;
    `workflow`: only that workflow's steps'; `type`: only these event types), from now
    on, or replayed after the event id in `Last-Event-ID` (or `last_event_id`). A
    `: heartbeat` comment comes every `events_heartbeat_seconds`.
    A replay that would begin with an event older than the replay window
    (`events_replay_hours`) begins instead with an `org.gridgate.stream.gone` message: a
    410 problem document telling you to re-read the state; new events follow it."""
    resume = _resume_from(last_event_id_header, last_event_id)
    where = await run_in_threadpool(_filter, runtime, principal, job, type, project,
                                    workflow)
    resources = follows(request, runtime)
    try:
        slot = resources.slots.acquire(principal.user_id)
    except SlotRefused as refusal:
        return refused(refusal, request, "")
    try:
        # Before the response starts: a client that saw its headers then submits a job
        # sees that job's events.
        subscription = await resources.hub.subscribe(where)
    except BaseException:
        slot.release()
        raise
    body = _events(request, runtime, resources.polls, subscription, where, resume)
    return SlotResponse(slot, body, media_type="text/event-stream",
                        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
                        closing=lambda: resources.hub.unsubscribe(subscription))


async def _replayed(runtime: Runtime, polls: anyio.CapacityLimiter, where: FeedFilter,
                    resume: int) -> AsyncIterator[tuple[int, bytes]]:
    """The events after `resume` committed so far, from the log."""
    cursor = await anyio.to_thread.run_sync(_replay_from, runtime, where, resume,
                                            limiter=polls)
    more = True
    while more:
        found, more = await anyio.to_thread.run_sync(read_messages, runtime, cursor,
                                                     limiter=polls)
        for row, message in found:
            yield row["id"], message


async def _events(request: Request, runtime: Runtime, polls: anyio.CapacityLimiter,
                  subscription: Subscription, where: FeedFilter,
                  resume: int | None) -> AsyncIterator[bytes]:
    settings = runtime.settings
    yield f"retry: {RECONNECT_MILLISECONDS}\n\n".encode()
    # A replay reads the log up to now; what commits meanwhile also reaches the
    # subscription, and is sent once.
    sent: set[int] = set()
    if resume is not None:
        top = await anyio.to_thread.run_sync(_gone, runtime, resume, limiter=polls)
        if top is not None:
            yield _gone_message(resume, top, settings.events_replay_hours)
        else:
            async for event_id, message in _replayed(runtime, polls, where, resume):
                sent.add(event_id)
                yield message
    beat = time.monotonic()
    while True:
        for event_id, message in subscription.take():
            if event_id not in sent:
                yield message
        if subscription.overflowed:
            return  # too far behind: the client resumes from the log with Last-Event-ID
        if stopping.is_stopping(request.app):
            return  # the client resumes with Last-Event-ID on another process
        if time.monotonic() - beat >= settings.events_heartbeat_seconds:
            beat = time.monotonic()
            yield HEARTBEAT
        left = settings.events_heartbeat_seconds - (time.monotonic() - beat)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(subscription.ready.wait(), max(0.0, left))
