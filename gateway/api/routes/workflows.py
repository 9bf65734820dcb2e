"""/api/v1/workflows: create (with Idempotency-Key), list, show with each step instance,
cancel (every unfinished instance), events; and the JSON Schema of a workflow spec.
Each instance runs as an ordinary job: `GET /api/v1/jobs/{job_id}`."""

from __future__ import annotations

from functools import cache
from typing import Annotated, Any

from fastapi import APIRouter, Body, Header, Query, Response

from gateway.api.deps import JobsReader, JobsWriter, RuntimeDep
from gateway.api.params.paging import DEFAULT_LIMIT, Cursor, Limit
from gateway.api.refusals import refusal_recorded
from gateway.api.schemas import json_response
from gateway.domain.jobspec import JobSpec
from gateway.schemas.workflows import (
    WorkflowEventList,
    WorkflowEventOut,
    WorkflowList,
    WorkflowOut,
    WorkflowStepOut,
)
from gateway.services.jobs.inputs import StagingLimits
from gateway.services.mail.requests import MailPolicy
from gateway.services.workflows import queries as workflow_queries
from gateway.services.workflows import submission as workflows
from gateway.services.workflows.advance import plan_of
from gateway.services.workflows.queries import WorkflowDetail
from gateway.settings import Settings
from gateway.store.blobs import BlobStore
from workflows.limits import DEFAULT_LIMITS, Limits
from workflows.readiness import StepState, WorkflowState
from workflows.schema import workflow_schema

router = APIRouter(prefix="/api/v1", tags=["workflows"])

SpecBody = Annotated[dict[str, Any], Body(description=(
    "A workflow spec (its JSON Schema: GET /api/v1/workflows/schema): `name`, `steps` "
    "(each a job spec with `needs`, `matrix`, `inputs` from other steps' outputs, "
    "`retry`) and `fail_fast`."), openapi_examples={"two steps": {"value": {
        "name": "mesh-then-solve", "steps": {
            "mesh": {"job": {"name": "mesh", "executable": "/bin/sh",
                             "args": ["-c", "echo grid > mesh.txt"], "outputs": ["mesh.txt"]}},
            "solve": {"inputs": [{"from": "mesh:outputs/mesh.txt", "dest": "mesh.txt"}],
                      "job": {"name": "solve", "executable": "/bin/cat",
                              "args": ["mesh.txt"]}}}}}})]


def limits_of(settings: Settings) -> Limits:
    """The workflow limits the gateway's settings set."""
    return Limits(max_steps=settings.workflow_max_steps,
                  max_instances=settings.workflow_max_instances,
                  max_matrix=min(DEFAULT_LIMITS.max_matrix, settings.workflow_max_instances))


def _steps(found: WorkflowDetail) -> list[WorkflowStepOut]:
    plan = plan_of(found.row["id"], found.row["spec"])
    needs = {i.id: list(i.needs) for i in plan.instances}
    return [WorkflowStepOut(
        instance=s.instance, step=s.step, matrix=s.matrix_key, state=s.state,
        reason=s.reason if s.reason is not None or s.state != StepState.PENDING
        else "waiting for " + ", ".join(needs.get(s.instance, [])),
        needs=needs.get(s.instance, []), job_id=s.job_id, job_state=s.job_state,
        site=s.site_name, retries=s.failures, retry_at=s.retry_at) for s in found.steps]


def _out(row: dict[str, Any], counts: dict[str, int],
         steps: list[WorkflowStepOut] | None) -> WorkflowOut:
    return WorkflowOut(
        id=row["id"], name=row["name"], owner=row["owner_name"] or row["owner_id"],
        state=row["state"], fail_fast=row["fail_fast"],
        cancel_requested=row["cancel_requested"], created_at=row["created_at"],
        updated_at=row["updated_at"], ended_at=row["ended_at"], step_states=counts,
        steps=steps, spec=row["spec"] if steps is not None else None)


def _detail_out(found: WorkflowDetail) -> WorkflowOut:
    counts: dict[str, int] = {}
    for s in found.steps:
        counts[s.state] = counts.get(s.state, 0) + 1
    return _out(found.row, counts, _steps(found))


@router.post("/workflows", status_code=202, response_model=WorkflowOut)
def create_workflow(
    spec: SpecBody,
    principal: JobsWriter,
    runtime: RuntimeDep,
    idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
) -> Response:
    """Accept a workflow: every step instance becomes a job, all in one transaction; the
    worker starts each once the steps it needs have completed. 422 names every problem
    (unknown steps, cycles, bad data edges, bad job fields) with where it is; 413 above
    the gateway's limits."""
    settings = runtime.settings
    with refusal_recorded(runtime, principal), runtime.unit_of_work() as session:
        found, created = workflows.create(
            session, runtime.sites, principal, spec, idempotency_key, limits_of(settings),
            StagingLimits.from_settings(settings), charged=settings.allocations_enforced,
            max_array_tasks=settings.job_array_max_tasks,
            store=BlobStore(settings.store_dir), mail=MailPolicy.from_settings(settings))
    headers = {"Location": f"/api/v1/workflows/{found.row['id']}"}
    if not created:
        headers["Idempotent-Replayed"] = "true"
    return json_response(WorkflowOut, _detail_out(found), 202, headers)


@cache
def _schema() -> dict[str, Any]:
    return workflow_schema(JobSpec.model_json_schema())


@router.get("/workflows/schema")
def get_workflow_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of a workflow spec, with the job spec of a step."""
    return _schema()


@router.get("/workflows", response_model=WorkflowList)
def list_workflows(
    principal: JobsReader,
    runtime: RuntimeDep,
    state: WorkflowState | None = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
    mine: Annotated[bool, Query(description="Only your own workflows (auditors and "
                                "administrators otherwise see everyone's).")] = False,
    id_prefix: Annotated[str | None, Query(max_length=36, description=(
        "Only workflows whose id starts with this (lower-case hex and '-'): how a client "
        "turns a short id such as `d3eca39f` into the workflow's id."))] = None,
) -> Response:
    """Your workflows, newest first, with how many steps are in each state; follow
    `next_cursor` for the next page."""
    with runtime.reading() as conn:
        page, counts = workflow_queries.list_workflows(
            conn, principal, state.value if state else None, mine, id_prefix, limit=limit,
            cursor=cursor)
    return json_response(WorkflowList, WorkflowList(
        items=[_out(row, counts[row["id"]], None) for row in page.rows],
        next_cursor=page.next_cursor))


@router.get("/workflows/{workflow_id}", response_model=WorkflowOut)
def get_workflow(workflow_id: str, principal: JobsReader, runtime: RuntimeDep) -> Response:
    """One workflow with each step instance, what it waits for, and its job's state."""
    with runtime.reading() as conn:
        found = workflow_queries.detail(conn, principal, workflow_id)
    return json_response(WorkflowOut, _detail_out(found))


@router.post("/workflows/{workflow_id}/cancel", status_code=202, response_model=WorkflowOut)
def cancel_workflow(workflow_id: str, principal: JobsWriter, runtime: RuntimeDep
                    ) -> Response:
    """Cancel every unfinished step: those not started at once, the others by asking
    their sites; the workflow ends CANCELLED once they have. 409 once it has ended."""
    with runtime.unit_of_work() as session:
        found = workflows.cancel(session, principal, workflow_id)
    return json_response(WorkflowOut, _detail_out(found), 202)


@router.get("/workflows/{workflow_id}/events", response_model=WorkflowEventList)
def workflow_events(workflow_id: str, principal: JobsReader, runtime: RuntimeDep,
                    limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Response:
    """What happened to the workflow and its steps, oldest first (each step's job has
    its own events too)."""
    with runtime.reading() as conn:
        page = workflow_queries.events(conn, principal, workflow_id, limit=limit,
                                       cursor=cursor)
    return json_response(WorkflowEventList, WorkflowEventList(
        items=[WorkflowEventOut(at=r["at"], instance=r["instance"], state=r["state"],
                                message=r["message"], actor=r["actor"]) for r in page.rows],
        next_cursor=page.next_cursor))
