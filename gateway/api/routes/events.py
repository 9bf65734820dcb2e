"""GET /api/v1/events: job state changes as Server-Sent Events, each a CloudEvent.

The events come from the `events` table, the transactional outbox every job state change
is written to; gateway.services.jobs.event_feed reads it without losing late commits.
Like an output follow (job_logs.py), the stream waits on the event loop holding no
thread, polls on the streams' own small thread pool, and takes a stream slot (caps per
user and per process: 429 / 503 beyond). It wakes by polling the table every
`events_poll_seconds`: LISTEN/NOTIFY wake-ups (PostgreSQL) are a later step.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import APIRouter, Header, Query, Request, Response
from sqlalchemy.exc import OperationalError
from starlette.concurrency import run_in_threadpool

from gateway.api.deps import JobsReader, RuntimeDep
from gateway.api.http import stopping
from gateway.api.http.follows import SlotResponse, follows, refused
from gateway.api.http.stream_slots import SlotRefused
from gateway.domain.errors import Invalid
from gateway.domain.principal import Principal
from gateway.runtime import Runtime
from gateway.schemas.events import JobStateEvent
from gateway.services.jobs import event_feed
from gateway.services.jobs.event_feed import FeedCursor

router = APIRouter(prefix="/api/v1", tags=["events"])
log = logging.getLogger(__name__)

EVENT_ID = re.compile(r"[0-9]{1,18}")
# How long a client's EventSource waits before it reconnects (the SSE `retry` field).
RECONNECT_MILLISECONDS = 2000
HEARTBEAT = b": heartbeat\n\n"


def _open(runtime: Runtime, principal: Principal, job: list[str], types: list[str],
          last_event_id: int | None) -> FeedCursor:
    with runtime.reading() as conn:
        where = event_feed.feed_filter(conn, principal, job, types)
        return FeedCursor.start(conn, where, last_event_id,
                                runtime.settings.events_late_commit_seconds)


def _poll(runtime: Runtime, cursor: FeedCursor) -> tuple[list[bytes], bool]:
    with runtime.reading() as conn:
        rows, more = cursor.poll(conn)
    url = runtime.settings.public_url
    return [_message(event_feed.cloud_event(row, url)) for row in rows], more


def _message(event: JobStateEvent) -> bytes:
    data = json.dumps(event, separators=(",", ":"))
    return f"id: {event['id']}\nevent: {event['type']}\ndata: {data}\n\n".encode()


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
                                            "(JobStateEvent) in its `data` field",
                             "content": {"text/event-stream": {"schema": {
                                 "$ref": "#/components/schemas/JobStateEvent"}}}},
                       429: {"description": "Too many streams of this user (Retry-After)"}})
async def stream_events(
    principal: JobsReader,
    runtime: RuntimeDep,
    request: Request,
    job: Annotated[list[str], Query(max_length=100)] = [],  # noqa: B006 (FastAPI copies it)
    type: Annotated[list[str], Query(max_length=16)] = [],  # noqa: B006
    last_event_id: Annotated[str | None, Query(max_length=40)] = None,
    last_event_id_header: Annotated[str | None, Header(alias="Last-Event-ID",
                                                       max_length=40)] = None,
) -> Response:
    """State changes of the jobs you may read (`job`: only these; `type`: only these
    event types), from now on, or replayed after the event id in `Last-Event-ID` (or
    `last_event_id`). A `: heartbeat` comment comes every `events_heartbeat_seconds`."""
    resume = _resume_from(last_event_id_header, last_event_id)
    cursor = await run_in_threadpool(_open, runtime, principal, job, type, resume)
    resources = follows(request, runtime)
    try:
        slot = resources.slots.acquire(principal.user_id)
    except SlotRefused as refusal:
        return refused(refusal, request, "")
    body = _events(request, runtime, resources.polls, cursor)
    return SlotResponse(slot, body, media_type="text/event-stream",
                        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


async def _events(request: Request, runtime: Runtime, polls: anyio.CapacityLimiter,
                  cursor: FeedCursor) -> AsyncIterator[bytes]:
    settings = runtime.settings
    yield f"retry: {RECONNECT_MILLISECONDS}\n\n".encode()
    beat = time.monotonic()
    while True:
        try:
            messages, more = await anyio.to_thread.run_sync(
                _poll, runtime, cursor, limiter=polls)
        except OperationalError as exc:
            # The database is away for a moment: keep the stream, poll again.
            log.warning("event stream: %s", exc)
            messages, more = [], False
        for message in messages:
            yield message
        if stopping.is_stopping(request.app):
            return  # the client resumes with Last-Event-ID on another process
        if time.monotonic() - beat >= settings.events_heartbeat_seconds:
            beat = time.monotonic()
            yield HEARTBEAT
        if not more:
            await asyncio.sleep(min(settings.events_poll_seconds,
                                    settings.events_heartbeat_seconds))
            if await request.is_disconnected():
                return

