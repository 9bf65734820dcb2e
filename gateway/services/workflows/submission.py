"""Commands on workflows: create and cancel. Reads: gateway.services.workflows.queries;
the worker's side: gateway.services.workflows.advance.

A workflow is created whole in the request's one unit of work: its row, one row per step
instance and, for each instance, an ordinary job (so routing, staging, accounting and
`gridgate job ...` apply to it) with a `job_dependencies` row (afterok) per job it waits
for. An instance that waits for others is gated (`Gate.WORKFLOW`) until the worker's
workflow step opens it, with its data edges resolved. A crash before the commit leaves
nothing; after it, the whole workflow. Services flush; the boundary commits.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError
from sqlalchemy.orm import Session

from adapters.reasons import because
from gateway.db.base import utcnow
from gateway.db.workflow_models import Workflow
from gateway.domain.errors import Conflict, Forbidden, Invalid, TooLarge
from gateway.domain.job_relations import Gate
from gateway.domain.jobspec import JobSpec
from gateway.domain.principal import Principal
from gateway.domain.states import JobState, Reason
from gateway.repositories import workflows as repo
from gateway.repositories.jobs import relations as job_relations
from gateway.repositories.jobs import rows as jobs
from gateway.services.jobs import submission as job_service
from gateway.services.jobs.inputs import StagingLimits
from gateway.services.lifecycle.transitions import request_cancel
from gateway.services.mail.requests import OFF, MailPolicy
from gateway.services.sites.registry import SiteRegistry
from gateway.services.workflows.queries import WorkflowDetail, detail
from gateway.store.blobs import BlobStore
from workflows.errors import InvalidWorkflow, LimitExceeded
from workflows.limits import Limits
from workflows.plan import Instance, Plan, plan_workflow
from workflows.readiness import FINAL_STEP_STATES, StepState, WorkflowState

MAX_STEPS_SETTING = "GRIDGATE_WORKFLOW_MAX_STEPS"
MAX_INSTANCES_SETTING = "GRIDGATE_WORKFLOW_MAX_INSTANCES"
# Job fields a step may not set: the workflow says what a step waits for and sweeps over.
NOT_IN_A_STEP = {"depends_on": "use the step's `needs`", "array": "use the step's `matrix`"}


def spec_hash(data: Mapping[str, Any]) -> str:
    """A stable digest of a workflow request, for Idempotency-Key comparison."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def make_plan(data: Mapping[str, Any], limits: Limits) -> Plan:
    """The plan of `data`, or Invalid (422) listing every problem with where it is, or
    TooLarge (413) above the limits."""
    try:
        plan = plan_workflow(data, limits)
    except LimitExceeded as exc:
        setting = (MAX_STEPS_SETTING if exc.what == "the number of steps"
                   else MAX_INSTANCES_SETTING)
        raise TooLarge(f"The workflow is too large: {exc.message} ({setting}).",
                       field="steps", limit=setting, limit_value=exc.limit,
                       excess=exc.value - exc.limit) from None
    except InvalidWorkflow as exc:
        raise Invalid(exc.message, field=exc.problems[0].where, errors=[
            {"field": p.where, "message": p.message, "kind": p.kind.value}
            for p in exc.problems]) from None
    problems: list[dict[str, str]] = []
    for instance in plan.instances:
        problems += _job_problems(instance)
    if problems:
        count = len(problems)
        lines = "\n".join(f"- {p['field']}: {p['message']}" for p in problems[:20])
        raise Invalid(f"The workflow has {count} problem{'s' if count != 1 else ''}:\n{lines}",
                      field=problems[0]["field"], errors=problems)
    return plan


def _job_problems(instance: Instance) -> list[dict[str, str]]:
    at = f"steps.{instance.step}.job"
    label = f"{instance.label}: " if instance.values else ""
    found = [{"field": f"{at}.{field}", "message": f"{label}a step's job may not set {field}: "
              f"{hint}", "kind": "job"} for field, hint in NOT_IN_A_STEP.items()
             if field in instance.job]
    if found:
        return found
    try:
        spec = JobSpec.model_validate(_job(instance))
    except ValidationError as exc:
        return [{"field": at + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                                       for p in e["loc"]),
                 "message": label + e["msg"], "kind": "job"} for e in exc.errors()]
    taken = {item.dest for item in spec.inputs}
    return [{"field": f"steps.{instance.step}.inputs", "kind": "data_edge", "message": (
        f"{label}the job's own inputs already place a file at {item.dest!r}: give the "
        "input another dest")} for item in instance.inputs if item.dest in taken]


def _job(instance: Instance) -> dict[str, Any]:
    job = dict(instance.job)
    job.setdefault("name", instance.label[:255])
    return job


def create(session: Session, registry: SiteRegistry, principal: Principal,
           data: Mapping[str, Any], idempotency_key: str | None, limits: Limits,
           staging: StagingLimits, *, charged: bool, max_array_tasks: int, store: BlobStore,
           mail: MailPolicy = OFF) -> tuple[WorkflowDetail, bool]:
    """Create the workflow `data` and a job for each of its instances; (its detail,
    created). A replayed Idempotency-Key returns the first workflow (created False)."""
    digest = spec_hash(data) if idempotency_key else ""
    if idempotency_key:
        replay = _replayed(session, principal, idempotency_key, digest)
        if replay is not None:
            return replay, False
    plan = make_plan(data, limits)
    now = utcnow()
    workflow = Workflow(id=str(uuid.uuid4()), owner_id=principal.user_id, name=plan.name,
                        spec=dict(data), state=WorkflowState.RUNNING.value,
                        fail_fast=plan.fail_fast, cancel_requested=False,
                        idempotency_key=idempotency_key, request_hash=digest,
                        created_at=now, updated_at=now)
    if not repo.insert(session, workflow):
        replay = _replayed(session, principal, idempotency_key or "", digest)
        assert replay is not None
        return replay, False
    job_of: dict[str, str] = {}
    steps: list[dict[str, Any]] = []
    dependencies: list[tuple[str, str, str]] = []
    gated: list[str] = []
    for position, instance in enumerate(plan.instances):
        spec = JobSpec.model_validate(_job(instance))
        row, _ = job_service.submit(session, registry, principal, spec, None, staging,
                                    charged, max_array_tasks, store=store, mail=mail)
        job_of[instance.id] = row["id"]
        dependencies += [(row["id"], job_of[need], "afterok") for need in instance.needs]
        if instance.needs:
            gated.append(row["id"])
        steps.append({
            "workflow_id": workflow.id, "instance": instance.id, "position": position,
            "step": instance.step, "matrix_key": ", ".join(f"{k}={v}" for k, v in
                                                           instance.values),
            "job_id": row["id"],
            "state": (StepState.PENDING if instance.needs else StepState.RUNNING).value,
            "reason": None, "failures": 0, "retry_at": None})
    if gated:
        repo.gate_jobs(session, gated, Gate.WORKFLOW.value, because(
            Reason.DEPENDENCY, "waiting for the steps of its workflow it needs"))
    job_relations.insert_dependencies(session, dependencies)
    repo.insert_steps(session, steps)
    repo.add_event(session, workflow, now, workflow.state, (
        f"created with {len(plan.instances)} step instance(s), "
        f"{len(plan.instances) - len(gated)} starting now"), principal.display)
    session.flush()
    return detail(session.connection(), principal, workflow.id), True


def _replayed(session: Session, principal: Principal, key: str, digest: str
              ) -> WorkflowDetail | None:
    found = repo.keyed(session, principal.user_id, key)
    if found is None:
        return None
    if found.request_hash != digest:
        raise Invalid("This Idempotency-Key was already used with a different workflow; use "
                      "a new key for a new workflow.", field="Idempotency-Key")
    return detail(session.connection(), principal, found.id)


def cancel(session: Session, principal: Principal, workflow_id: str) -> WorkflowDetail:
    """Cancel the workflow: every unfinished instance's job is cancelled (at once while
    no worker has taken it, else by asking the worker to); the worker's workflow step
    then records the end. Conflict when the workflow has already ended."""
    found = detail(session.connection(), principal, workflow_id)
    if found.row["owner_id"] != principal.user_id and not principal.has_role("admin"):
        raise Forbidden("Only the workflow's owner can cancel it.")
    workflow = repo.lock(session, workflow_id)
    assert workflow is not None
    if workflow.state != WorkflowState.RUNNING.value:
        raise Conflict(f"Workflow {workflow_id} has already ended ({workflow.state}); there "
                       "is nothing to cancel.")
    if workflow.cancel_requested:
        return found
    now = utcnow()
    workflow.cancel_requested = True
    workflow.updated_at = now
    rows = repo.step_rows(session, workflow_id)
    locked = jobs.lock_many(session, [r.job_id for r in rows.values() if r.job_id])
    for row in rows.values():
        if StepState(row.state) in FINAL_STEP_STATES:
            continue
        job = locked.get(row.job_id or "")
        if job is not None and not JobState(job.state).is_final and not job.cancel_requested:
            request_cancel(session, job, principal.display)
        if job is not None and JobState(job.state) is JobState.CANCELLED:
            row.state, row.reason = StepState.CANCELLED.value, "the workflow was cancelled"
    repo.add_event(session, workflow, now, workflow.state,
                   "cancel requested: every unfinished step is cancelled", principal.display)
    session.flush()
    return detail(session.connection(), principal, workflow_id)
