"""/api/v1/jobs: submit, list, show, cancel, events (logs: job_logs.py, outputs: job_outputs.py)."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Literal

from fastapi import APIRouter, Header, Query, Response

from gateway.api.deps import JobsReader, JobsWriter, RuntimeDep
from gateway.api.params.paging import DEFAULT_LIMIT, Cursor, Limit
from gateway.api.params.times import Time, as_utc
from gateway.api.refusals import refusal_recorded
from gateway.api.schemas import EventList, JobList, JobOut, event_out, job_out, json_response
from gateway.domain.errors import Invalid
from gateway.domain.job_origin import JobOrigin
from gateway.domain.jobspec import JobSpec
from gateway.domain.state_names import accepted_names, parse_states
from gateway.schemas.placements import EstimateOut, PlacementOut
from gateway.services.images import container_images
from gateway.services.jobs import holds as job_holds
from gateway.services.jobs import queries as job_queries
from gateway.services.jobs import submission as job_service
from gateway.services.jobs.inputs import StagingLimits
from gateway.services.jobs.queries import MAX_LABEL_FILTERS, JobFilter
from gateway.services.mail.requests import MailPolicy
from gateway.services.routing import placement
from gateway.services.routing.forecasting import build_forecaster
from gateway.services.routing.site_snapshots import take_snapshots, unreachable
from gateway.store.blobs import BlobStore
from workflows.limits import DEFAULT_LIMITS

router = APIRouter(prefix="/api/v1", tags=["jobs"])
MAX_ARRAY_INDEX = DEFAULT_LIMITS.max_array_index


@router.post("/jobs", status_code=202, response_model=JobOut)
def submit_job(
    spec: JobSpec,
    principal: JobsWriter,
    runtime: RuntimeDep,
    idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
) -> Response:
    """Accept a job; the worker stages and submits it. Returns at once with its id."""
    with refusal_recorded(runtime, principal), runtime.unit_of_work() as session:
        row, created = job_service.submit(session, runtime.sites, principal, spec,
                                          idempotency_key,
                                          StagingLimits.from_settings(runtime.settings),
                                          charged=runtime.settings.allocations_enforced,
                                          max_array_tasks=runtime.settings.job_array_max_tasks,
                                          store=BlobStore(runtime.settings.store_dir),
                                          mail=MailPolicy.from_settings(runtime.settings))
        # A new job has no attempt yet; a replayed one may have several.
        attempts = [] if created else job_queries.attempts_of(session.connection(),
                                                              [row])[row["id"]]
    headers = {"Location": f"/api/v1/jobs/{row['id']}"}
    if not created:
        headers["Idempotent-Replayed"] = "true"
    return json_response(JobOut, job_out(row, attempts), 202, headers)


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
    state: Annotated[list[str], Query(description=(
        "Only jobs in these states (repeatable, or comma-separated; any case): "
        f"{accepted_names()}."))] = [],  # noqa: B006
    site: str | None = None,
    project: str | None = None,
    label: Annotated[list[str], Query()] = [],  # noqa: B006  (FastAPI copies defaults)
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
    name: Annotated[str | None, Query(max_length=255, description="Only jobs of this exact "
                                      "name.")] = None,
    name_glob: Annotated[str | None, Query(max_length=255, description=(
        "Only jobs whose name matches this glob: '*' any text, '?' one character, "
        "everything else itself."))] = None,
    id_prefix: Annotated[str | None, Query(max_length=36, description=(
        "Only jobs whose id starts with this (lower-case hex and '-'): how a client turns "
        "a short id such as `d3eca39f` into the job's id, in one request."))] = None,
    mine: Annotated[bool, Query(description="Only your own jobs (auditors and "
                                "administrators otherwise see everyone's).")] = False,
    array_job_id: Annotated[str | None, Query(max_length=36, description=(
        "Only the tasks of this job array (its whole id)."))] = None,
    array_index: Annotated[int | None, Query(ge=0, le=MAX_ARRAY_INDEX, description=(
        "Only array tasks of this index (with `array_job_id`: that one task)."))] = None,
    origin: Annotated[JobOrigin | None, Query(description=(
        "Only jobs that came in by this door: api (this API, the CLI, workflows) or tes "
        "(GA4GH TES)."))] = None,
    created_after: Annotated[Time, Query(description=(
        "Only jobs submitted at or after this time (RFC 3339; without a zone, UTC)."))] = None,
    created_before: Annotated[Time, Query(description=(
        "Only jobs submitted before this time (RFC 3339; without a zone, UTC)."))] = None,
    order: Annotated[Literal["newest", "oldest"], Query(description=(
        "newest first (the default) or oldest first; give the same order with "
        "`cursor`."))] = "newest",
) -> Response:
    """Your jobs, newest first; follow `next_cursor` for the next page."""
    filters = JobFilter(states=parse_states(state), site=site, project=project,
                        labels=_label_pairs(label), name=name, name_glob=name_glob,
                        id_prefix=id_prefix, mine=mine, array_job_id=array_job_id,
                        array_index=array_index, origin=origin,
                        created_after=as_utc(created_after),
                        created_before=as_utc(created_before),
                        oldest_first=order == "oldest")
    with runtime.reading() as conn:
        page = job_queries.list_jobs(conn, principal, filters, limit=limit, cursor=cursor)
        attempts = job_queries.attempts_of(conn, page.jobs)
    return json_response(JobList, JobList(
        items=[job_out(row, attempts[row["id"]]) for row in page.jobs],
        next_cursor=page.next_cursor))


@router.get("/jobs/{job_id}", response_model=JobOut)
def get_job(job_id: str, principal: JobsReader, runtime: RuntimeDep) -> Response:
    with runtime.reading() as conn:
        row, attempts = job_queries.job_detail(conn, principal, job_id)
    return json_response(JobOut, job_out(row, attempts))


@router.post("/jobs/{job_id}/cancel", status_code=202, response_model=JobOut)
def cancel_job(job_id: str, principal: JobsWriter, runtime: RuntimeDep) -> Response:
    """Cancel a job. Queued or running jobs end CANCELLED once the site confirms."""
    with runtime.unit_of_work() as session:
        row = job_service.cancel(session, principal, job_id)
        attempts = job_queries.attempts_of(session.connection(), [row])[row["id"]]
    return json_response(JobOut, job_out(row, attempts), 202)


@router.post("/jobs/{job_id}/hold", response_model=JobOut)
def hold_job(job_id: str, principal: JobsWriter, runtime: RuntimeDep) -> Response:
    """Hold a job that is still ACCEPTED: no worker routes or submits it until it is
    released. 409 once a worker has taken it to a site (cancel it instead)."""
    with runtime.unit_of_work() as session:
        row = job_holds.hold(session, principal, job_id)
        attempts = job_queries.attempts_of(session.connection(), [row])[row["id"]]
    return json_response(JobOut, job_out(row, attempts))


@router.post("/jobs/{job_id}/release", response_model=JobOut)
def release_job(job_id: str, principal: JobsWriter, runtime: RuntimeDep) -> Response:
    """Release a held job: the worker routes and submits it as usual."""
    with runtime.unit_of_work() as session:
        row = job_holds.release(session, principal, job_id)
        attempts = job_queries.attempts_of(session.connection(), [row])[row["id"]]
    return json_response(JobOut, job_out(row, attempts))


@router.post("/jobs:estimate", response_model=EstimateOut)
def estimate_job(spec: JobSpec, principal: JobsReader, runtime: RuntimeDep) -> Response:
    """Where the job would go now and why: every site excluded (and why) or forecast
    (wait median and 95% bound, run time, staging, completion). Nothing is stored or
    submitted."""
    with runtime.readers() as session:
        spec = container_images.resolve(session, BlobStore(runtime.settings.store_dir),
                                        principal.user_id, spec)
        names = placement.accepting_sites(session, runtime.sites)
    snapshots = take_snapshots(runtime.sites, names)  # each open site asked once, now
    with runtime.readers() as session:
        document = placement.estimate(session, runtime.sites, spec, principal.account_name,
                                      principal.user_id,
                                      partial(build_forecaster, snapshots=snapshots),
                                      runtime.clock(), unreachable(snapshots.values()),
                                      runtime.settings.allocations_enforced)
    return json_response(EstimateOut, document)


@router.get("/jobs/{job_id}/placement", response_model=PlacementOut)
def job_placement(job_id: str, principal: JobsReader, runtime: RuntimeDep) -> Response:
    """The routing decision that placed the job, with every candidate site, as it was
    made; 404 while a `site: auto` job waits for its first routing pass."""
    with runtime.reading() as conn:
        document = job_queries.placement(conn, principal, job_id)
    return json_response(PlacementOut, document)


@router.get("/jobs/{job_id}/events", response_model=EventList)
def job_events(job_id: str, principal: JobsReader, runtime: RuntimeDep,
               limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> EventList:
    """The job's state changes, oldest first; follow `next_cursor` for the next page."""
    with runtime.reading() as conn:
        page = job_queries.events(conn, principal, job_id, limit=limit, cursor=cursor)
    return EventList(items=[event_out(row) for row in page.rows],
                     next_cursor=page.next_cursor)
