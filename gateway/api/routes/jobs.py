"""/api/v1/jobs: submit, list, show, cancel, events, output."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, Response
from fastapi.responses import StreamingResponse
from sqlalchemy import select

from adapters.base import OutputChunk
from gateway.api.deps import JobsReader, JobsWriter, RuntimeDep, SessionDep
from gateway.api.schemas import EventList, EventOut, JobList, JobOut, json_response
from gateway.db.models import Attempt, Job, User
from gateway.domain.errors import Invalid, Unavailable
from gateway.domain.jobspec import JobSpec
from gateway.domain.states import JobState
from gateway.runtime import Runtime
from gateway.services import job_queries
from gateway.services import jobs as job_service
from gateway.services.job_inputs import StagingLimits
from gateway.services.job_queries import MAX_LABEL_FILTERS, JobFilter

router = APIRouter(prefix="/api/v1", tags=["jobs"])

OUTPUT_CHUNK = 256 * 1024
FOLLOW_POLL_SECONDS = 0.5


@router.post("/jobs", status_code=202, response_model=JobOut)
def submit_job(
    spec: JobSpec,
    principal: JobsWriter,
    session: SessionDep,
    runtime: RuntimeDep,
    idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
) -> Response:
    """Accept a job; the worker stages and submits it. Returns at once with its id."""
    row, created = job_service.submit(session, runtime.sites, principal, spec, idempotency_key,
                                      StagingLimits.from_settings(runtime.settings))
    session.commit()
    headers = {"Location": f"/api/v1/jobs/{row['id']}"}
    if not created:
        headers["Idempotent-Replayed"] = "true"
    return json_response(JobOut.from_row(row), 202, headers)


def _label_pairs(labels: list[str]) -> tuple[tuple[str, str], ...]:
    if len(labels) > MAX_LABEL_FILTERS:
        raise Invalid(f"At most {MAX_LABEL_FILTERS} label filters may be given at once; "
                      f"this request has {len(labels)}.", field="label")
    pairs = []
    for item in labels:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise Invalid(f"Label filter {item!r} must look like key=value.", field="label")
        pairs.append((key, value))
    return tuple(pairs)


@router.get("/jobs", response_model=JobList)
def list_jobs(
    principal: JobsReader,
    runtime: RuntimeDep,
    state: JobState | None = None,
    site: str | None = None,
    project: str | None = None,
    label: Annotated[list[str], Query()] = [],  # noqa: B006  (FastAPI copies defaults)
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[str | None, Query(max_length=512)] = None,
) -> Response:
    """Your jobs, newest first; follow `next_cursor` for the next page."""
    filters = JobFilter(state=state, site=site, project=project, labels=_label_pairs(label))
    with runtime.reading() as conn:
        page = job_queries.list_jobs(conn, principal, filters, limit=limit, cursor=cursor)
    return json_response(JobList(items=[JobOut.from_row(row) for row in page.jobs],
                                 next_cursor=page.next_cursor))


@router.get("/jobs/{job_id}", response_model=JobOut)
def get_job(job_id: str, principal: JobsReader, runtime: RuntimeDep) -> Response:
    with runtime.reading() as conn:
        row, attempts = job_queries.job_detail(conn, principal, job_id)
    return json_response(JobOut.from_row(row, attempts))


@router.post("/jobs/{job_id}/cancel", status_code=202, response_model=JobOut)
def cancel_job(job_id: str, principal: JobsWriter, session: SessionDep) -> Response:
    """Cancel a job. Queued or running jobs end CANCELLED once the site confirms."""
    row = job_service.cancel(session, principal, job_id)
    session.commit()
    return json_response(JobOut.from_row(row), 202)


@router.get("/jobs/{job_id}/events", response_model=EventList)
def job_events(job_id: str, principal: JobsReader, runtime: RuntimeDep) -> EventList:
    with runtime.reading() as conn:
        rows = job_queries.events(conn, principal, job_id)
    return EventList(items=[EventOut.from_row(row) for row in rows])


def _latest_attempt(runtime: Runtime, job_id: str) -> tuple[str, Attempt | None, str | None]:
    """The job's state, its newest attempt and its owner's gateway username."""
    with runtime.readers() as session:
        job = session.get(Job, job_id)
        assert job is not None
        attempt = session.scalar(select(Attempt).where(Attempt.job_id == job_id)
                                 .order_by(Attempt.number.desc()).limit(1))
        owner = session.scalar(select(User.username).where(User.id == job.owner_id))
        return job.state, attempt, owner


def _read(runtime: Runtime, owner: str | None, attempt: Attempt | None,
          stream: Literal["stdout", "stderr"], offset: int, limit: int) -> OutputChunk:
    if attempt is None:
        return OutputChunk(b"", offset, None)
    # Read as the account that ran the job: on a mapped site only it can open the files.
    adapter = runtime.sites.get(attempt.site_name).adapter_for(owner)
    try:
        return adapter.read_output(attempt.workdir, stream, offset, limit)
    except Exception as exc:  # an adapter failure must reach the user as 503, not 500
        raise Unavailable(f"Could not read {stream} from site '{attempt.site_name}': {exc}. "
                          "Try again later.") from exc


@router.get("/jobs/{job_id}/output/{stream}", response_class=Response,
            responses={200: {"content": {"text/plain": {}}}})
def job_output(
    job_id: str,
    stream: Literal["stdout", "stderr"],
    principal: JobsReader,
    runtime: RuntimeDep,
    offset: Annotated[int | None, Query(ge=0)] = None,
    tail: Annotated[int | None, Query(ge=0, le=64 * 1024 * 1024)] = None,
    limit: Annotated[int, Query(ge=1, le=64 * 1024 * 1024)] = 8 * 1024 * 1024,
    follow: bool = False,
) -> Response:
    """The job's stdout or stderr: from `offset`, or the last `tail` bytes; with `follow`
    the response streams until the job is final and everything was sent."""
    if offset is not None and tail is not None:
        raise Invalid("Give 'offset' or 'tail', not both.", field="tail")
    with runtime.reading() as conn:
        job_queries.ensure_visible(conn, principal, job_id)  # 404 for others' jobs
    _, attempt, owner = _latest_attempt(runtime, job_id)
    start = offset or 0
    if tail is not None:
        size = _read(runtime, owner, attempt, stream, 0, 0).size or 0
        start = max(0, size - tail)
    headers = {"X-Content-Type-Options": "nosniff", "Cache-Control": "no-store"}
    if not follow:
        chunk = _read(runtime, owner, attempt, stream, start, limit)
        headers["X-Output-Size"] = str(chunk.size or 0)
        return Response(chunk.data, media_type="text/plain; charset=utf-8", headers=headers)
    return StreamingResponse(_follow(runtime, job_id, stream, start),
                             media_type="text/plain; charset=utf-8", headers=headers)


def _follow(runtime: Runtime, job_id: str, stream: Literal["stdout", "stderr"],
            offset: int) -> Iterator[bytes]:
    while True:
        state, attempt, owner = _latest_attempt(runtime, job_id)
        chunk = _read(runtime, owner, attempt, stream, offset, OUTPUT_CHUNK)
        if chunk.data:
            offset += len(chunk.data)
            yield chunk.data
            continue
        # Only stop once the job is final AND a read after that saw nothing new.
        if JobState(state).is_final:
            return
        time.sleep(FOLLOW_POLL_SECONDS)
