"""/api/v1/job-arrays: the job arrays you submitted (`array:` in a job spec), each with
its tasks' states, and cancelling every unfinished task of one at once. The tasks
themselves are jobs: `GET /api/v1/jobs?array_job_id=...`."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from gateway.api.deps import JobsReader, JobsWriter, RuntimeDep
from gateway.api.params.paging import DEFAULT_LIMIT, Cursor, Limit
from gateway.api.schemas import JobArrayList, JobArrayOut, array_out, json_response
from gateway.services.jobs import arrays as job_arrays

router = APIRouter(prefix="/api/v1", tags=["jobs"])


@router.get("/job-arrays", response_model=JobArrayList)
def list_job_arrays(
    principal: JobsReader,
    runtime: RuntimeDep,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
    id_prefix: Annotated[str | None, Query(max_length=36, description=(
        "Only arrays whose id starts with this (lower-case hex and '-'): how a client "
        "turns a short id such as `d3eca39f` into the array's id."))] = None,
    mine: Annotated[bool, Query(description="Only your own arrays (auditors and "
                                "administrators otherwise see everyone's).")] = False,
) -> Response:
    """Your job arrays, newest first; follow `next_cursor` for the next page."""
    job_arrays.check_prefix(id_prefix)
    with runtime.reading() as conn:
        page = job_arrays.list_arrays(conn, principal, id_prefix, mine, limit=limit,
                                      cursor=cursor)
    return json_response(JobArrayList, JobArrayList(
        items=[array_out(row) for row in page.rows], next_cursor=page.next_cursor))


@router.get("/job-arrays/{array_job_id}", response_model=JobArrayOut)
def get_job_array(array_job_id: str, principal: JobsReader, runtime: RuntimeDep) -> Response:
    """One job array, with how many of its tasks are in each state."""
    with runtime.reading() as conn:
        row = job_arrays.array_detail(conn, principal, array_job_id)
    return json_response(JobArrayOut, array_out(row))


@router.post("/job-arrays/{array_job_id}/cancel", status_code=202,
             response_model=JobArrayOut)
def cancel_job_array(array_job_id: str, principal: JobsWriter, runtime: RuntimeDep
                     ) -> Response:
    """Cancel every task of the array that has not ended (as `POST /jobs/{id}/cancel`
    does for one), in one step; 409 when all have ended."""
    with runtime.unit_of_work() as session:
        row = job_arrays.cancel_array(session, principal, array_job_id)
    return json_response(JobArrayOut, array_out(row), 202)
