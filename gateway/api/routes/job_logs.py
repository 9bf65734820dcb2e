"""GET /api/v1/jobs/{id}/logs/{stream}: a job's stdout or stderr, read or followed.

A read (`offset` or `tail`, `limit`) is a short request on the API's thread pool. A
follow streams from the event loop: while it waits it holds no thread, its polls (one
short query and one read) run on a small pool of their own so they never queue ahead of
short requests, it takes a slot (caps per user and per process; 429 / 503 beyond), and
it gives the slot back as soon as the client goes away.

An `offset` past the end of a finished job's output is 416 (the file will not grow);
for a job still running it is an empty 200, as the output may get there.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Annotated, Literal

import anyio
from fastapi import APIRouter, Query, Request, Response
from sqlalchemy.exc import OperationalError
from starlette.concurrency import run_in_threadpool

from adapters.base import OutputChunk
from adapters.errors import AdapterError
from gateway.api.deps import JobsReader, RuntimeDep
from gateway.api.http import stopping
from gateway.api.http.follows import SlotResponse, follows, refused
from gateway.api.http.stream_slots import SlotRefused
from gateway.api.problems import problem
from gateway.domain.errors import Invalid
from gateway.domain.principal import Principal
from gateway.runtime import Runtime
from gateway.services.jobs import queries as job_queries
from gateway.services.jobs.job_output import (
    OutputSource,
    output_source,
    output_tail,
    read_output,
)

router = APIRouter(prefix="/api/v1", tags=["jobs"])
log = logging.getLogger(__name__)

Stream = Literal["stdout", "stderr"]
OUTPUT_CHUNK = 256 * 1024
FOLLOW_POLL_SECONDS = 0.5
# The largest offset a file can have (off_t).
MAX_OFFSET = 2**63 - 1


def _first(runtime: Runtime, principal: Principal, job_id: str, stream: Stream,
           offset: int | None, tail: int | None, limit: int
           ) -> tuple[OutputSource, int, OutputChunk]:
    """Check the caller may see the job, then read from where the request asks."""
    with runtime.reading() as conn:
        job_queries.ensure_visible(conn, principal, job_id)  # 404 for others' jobs
    source = output_source(runtime, job_id)
    if tail is not None:
        start, chunk = output_tail(runtime, source, stream, tail, limit)
        return source, start, chunk
    start = offset or 0
    return source, start, read_output(runtime, source, stream, start, limit)


def _poll(runtime: Runtime, job_id: str, stream: Stream, offset: int) -> tuple[bool, bytes]:
    """Whether the job was final before the read, and what the read found."""
    source = output_source(runtime, job_id)
    return source.final, read_output(runtime, source, stream, offset, OUTPUT_CHUNK).data


@router.get("/jobs/{job_id}/logs/{stream}", response_class=Response,
            responses={200: {"content": {"text/plain": {}}},
                       416: {"description": "Offset past the end of a finished job's output"},
                       429: {"description": "Too many streams of this user (Retry-After)"}})
async def job_logs(
    job_id: str,
    stream: Stream,
    principal: JobsReader,
    runtime: RuntimeDep,
    request: Request,
    offset: Annotated[int | None, Query(ge=0, le=MAX_OFFSET)] = None,
    tail: Annotated[int | None, Query(ge=0, le=64 * 1024 * 1024)] = None,
    limit: Annotated[int, Query(ge=1, le=64 * 1024 * 1024)] = 8 * 1024 * 1024,
    follow: bool = False,
) -> Response:
    """The job's stdout or stderr: from `offset`, or the last `tail` bytes; with `follow`
    the response streams until the job is final and everything was sent."""
    if offset is not None and tail is not None:
        raise Invalid("Give 'offset' or 'tail', not both.", field="tail")
    source, start, chunk = await run_in_threadpool(
        _first, runtime, principal, job_id, stream, offset, tail,
        OUTPUT_CHUNK if follow else limit)
    size = chunk.size or 0
    if source.final and start > size:
        return problem(416, f"The offset {start} lies past the end of the job's {stream} "
                       f"({size} bytes); the job has ended, so its {stream} will not grow.",
                       instance=request.url.path, headers={"Content-Range": f"bytes */{size}"})
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
    if not follow:
        headers["X-Output-Size"] = str(size)
        return Response(chunk.data, media_type="text/plain; charset=utf-8", headers=headers)
    resources = follows(request, runtime)
    try:
        slot = resources.slots.acquire(principal.user_id)
    except SlotRefused as refusal:
        return refused(refusal, request, ", or read with 'offset' instead of 'follow'")
    body = _follow(request, runtime, resources.polls, job_id, stream, start, source.final,
                   chunk.data)
    return SlotResponse(slot, body, media_type="text/plain; charset=utf-8", headers=headers)


async def _follow(request: Request, runtime: Runtime, polls: anyio.CapacityLimiter,
                  job_id: str, stream: Stream, offset: int, final: bool,
                  data: bytes) -> AsyncIterator[bytes]:
    # `final` always comes from a state read taken before the read that gave `data`:
    # the stream ends only when the job was final and a later read found nothing new.
    while True:
        if data:
            offset += len(data)
            yield data
        elif final:
            return
        if stopping.is_stopping(request.app):
            # The server is stopping: end the response cleanly now (the client sees the
            # job is not over, and resumes from its offset or says why it cannot).
            return
        if not data:
            await asyncio.sleep(FOLLOW_POLL_SECONDS)
            if await request.is_disconnected():
                return
        try:
            final, data = await anyio.to_thread.run_sync(
                _poll, runtime, job_id, stream, offset, limiter=polls)
        except (AdapterError, OperationalError) as exc:
            # The site or database is down for a moment: keep following, like `tail -F`.
            log.warning("following %s of job %s: %s", stream, job_id, exc)
            final, data = False, b""
