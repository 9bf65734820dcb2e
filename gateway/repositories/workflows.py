"""Workflows: their rows, their step instances with the state of the job each runs as,
and their events. Services flush; the boundary commits."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Connection, and_, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gateway.db.job_relation_models import JobDependencyRow
from gateway.db.models import Job, JobOutput, User
from gateway.db.workflow_models import Workflow, WorkflowEvent, WorkflowStep
from gateway.repositories import bulk
from gateway.repositories.events import facts
from gateway.schemas.events import WORKFLOW_STATE_TYPE, WORKFLOW_STEP_TYPE


class StepView(NamedTuple):
    """One step instance with the state of its job (None before it has one)."""

    instance: str
    position: int
    step: str
    matrix_key: str
    state: str
    reason: str | None
    failures: int
    retry_at: datetime | None
    job_id: str | None
    job_state: str | None
    job_reason: str | None
    job_gate: str | None
    site_name: str | None


def insert(session: Session, workflow: Workflow) -> bool:
    """Insert the workflow; False (nothing written) when a concurrent request took the
    same Idempotency-Key first."""
    try:
        with session.begin_nested():
            session.add(workflow)
            session.flush()
    except IntegrityError:
        if workflow.idempotency_key is None:
            raise
        return False
    return True


def insert_steps(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Insert step instance rows (the columns of WorkflowStep)."""
    bulk.insert_rows(session.connection(), WorkflowStep.__table__,  # type: ignore[arg-type]
                     list(rows))


def add_event(session: Session, workflow: Workflow, at: datetime, state: str, message: str,
              actor: str, instance: str | None = None) -> None:
    """Append an event of the workflow (or of one of its step instances) to its history,
    and to the event log (its owner's: gateway.schemas.events)."""
    session.add(WorkflowEvent(workflow_id=workflow.id, at=at, instance=instance, state=state,
                              message=message, actor=actor))
    data = {"workflow": workflow.id, "state": str(state), "message": message, "actor": actor}
    facts.add_all(session, [facts.NewFact(
        WORKFLOW_STATE_TYPE if instance is None else WORKFLOW_STEP_TYPE, at, actor,
        data if instance is None else {**data, "step": instance},
        subject=f"workflow:{workflow.id}", owner_id=workflow.owner_id)])


def keyed(session: Session, owner_id: str, key: str) -> Workflow | None:
    """The owner's workflow created with this Idempotency-Key, if any."""
    return session.scalars(select(Workflow).where(
        Workflow.owner_id == owner_id, Workflow.idempotency_key == key)).first()


def get(conn: Connection, workflow_id: str, owner_id: str | None) -> dict[str, Any] | None:
    """The workflow row with its owner's name (owned by `owner_id` unless None)."""
    query = (select(*Workflow.__table__.c, User.username.label("owner_name"))
             .join(User, User.id == Workflow.owner_id).where(Workflow.id == workflow_id))
    if owner_id is not None:
        query = query.where(Workflow.owner_id == owner_id)
    row = conn.execute(query).mappings().first()
    return None if row is None else dict(row)


def lock(session: Session, workflow_id: str) -> Workflow | None:
    """The workflow, its row locked until the unit of work ends."""
    return session.get(Workflow, workflow_id, with_for_update=True)


def page(conn: Connection, owner_id: str | None, state: str | None, id_prefix: str | None,
         *, limit: int, after: tuple[datetime, str] | None) -> list[dict[str, Any]]:
    """Up to `limit` workflows (in `state`, ids starting with `id_prefix`, if given),
    newest first, from just after (created_at, id) `after`."""
    query = (select(*Workflow.__table__.c, User.username.label("owner_name"))
             .join(User, User.id == Workflow.owner_id))
    if owner_id is not None:
        query = query.where(Workflow.owner_id == owner_id)
    if state is not None:
        query = query.where(Workflow.state == state)
    if id_prefix is not None:
        query = query.where(Workflow.id.startswith(id_prefix, autoescape=True))
    if after is not None:
        created, workflow_id = after
        query = query.where(or_(Workflow.created_at < created,
                                and_(Workflow.created_at == created, Workflow.id < workflow_id)))
    query = query.order_by(Workflow.created_at.desc(), Workflow.id.desc()).limit(limit)
    return [dict(row) for row in conn.execute(query).mappings()]


def step_counts(conn: Connection, workflow_ids: Sequence[str]) -> dict[str, dict[str, int]]:
    """Workflow id -> {step state: how many instances}."""
    counts: dict[str, dict[str, int]] = {w: {} for w in workflow_ids}
    if not workflow_ids:
        return counts
    rows = conn.execute(select(WorkflowStep.workflow_id, WorkflowStep.state, func.count())
                        .where(WorkflowStep.workflow_id.in_(list(workflow_ids)))
                        .group_by(WorkflowStep.workflow_id, WorkflowStep.state))
    for workflow_id, state, count in rows:
        counts[workflow_id][state] = count
    return counts


def steps(conn: Connection, workflow_id: str) -> list[StepView]:
    """The workflow's instances in plan order, each with its job's state."""
    query = (select(WorkflowStep.instance, WorkflowStep.position, WorkflowStep.step,
                    WorkflowStep.matrix_key, WorkflowStep.state, WorkflowStep.reason,
                    WorkflowStep.failures, WorkflowStep.retry_at, WorkflowStep.job_id,
                    Job.state, Job.reason, Job.gate, Job.site_name)
             .outerjoin(Job, Job.id == WorkflowStep.job_id)
             .where(WorkflowStep.workflow_id == workflow_id)
             .order_by(WorkflowStep.position))
    return [StepView._make(row) for row in conn.execute(query)]


def step_rows(session: Session, workflow_id: str) -> dict[str, WorkflowStep]:
    """The workflow's instance rows by instance id (for the worker, under the workflow's
    lock)."""
    return {row.instance: row for row in session.scalars(
        select(WorkflowStep).where(WorkflowStep.workflow_id == workflow_id))}


def running_ids(session: Session, limit: int, after: str | None) -> list[str]:
    """Up to `limit` workflows still running, by id, after `after`."""
    query = select(Workflow.id).where(Workflow.state == "running")
    if after is not None:
        query = query.where(Workflow.id > after)
    return list(session.scalars(query.order_by(Workflow.id).limit(limit)))


def events(conn: Connection, workflow_id: str, *, limit: int, after: int | None
           ) -> list[dict[str, Any]]:
    """Up to `limit` events of the workflow, oldest first, after the event id `after`."""
    query = select(*WorkflowEvent.__table__.c).where(WorkflowEvent.workflow_id == workflow_id)
    if after is not None:
        query = query.where(WorkflowEvent.id > after)
    return [dict(row) for row in conn.execute(query.order_by(WorkflowEvent.id).limit(limit))
            .mappings()]


def outputs(session: Session, job_ids: Sequence[str]) -> dict[str, list[JobOutput]]:
    """The collected outputs of each job."""
    found: dict[str, list[JobOutput]] = {j: [] for j in job_ids}
    if job_ids:
        for row in session.scalars(select(JobOutput).where(JobOutput.job_id.in_(
                list(job_ids))).order_by(JobOutput.id)):
            found[row.job_id].append(row)
    return found


def move_dependencies(session: Session, old_job_id: str, new_job_id: str) -> None:
    """Dependencies on `old_job_id` now name `new_job_id` (a retried step's new job)."""
    session.execute(update(JobDependencyRow)
                    .where(JobDependencyRow.depends_on_id == old_job_id)
                    .values(depends_on_id=new_job_id))


def gate_jobs(session: Session, job_ids: Sequence[str], gate: str, reason: str) -> None:
    """Hold the jobs `job_ids` at `gate`, saying why."""
    session.execute(update(Job).where(Job.id.in_(job_ids)).values(gate=gate, reason=reason))
