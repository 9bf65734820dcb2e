"""ORM models of workflows (issue 16): one row per workflow as submitted, one per step
instance (a step, or one combination of its matrix), and the workflow's own events. Each
instance runs as an ordinary job (`job_id`), created with the workflow in one unit of
work; a retry replaces it with a fresh job. The worker advances a workflow from these
rows and its jobs' rows alone (gateway.services.workflows.advance)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base, utcnow


class Workflow(Base):
    """A workflow as submitted: its spec, state (workflows.readiness.WorkflowState) and
    whether its owner asked to cancel it."""

    __tablename__ = "workflows"
    __table_args__ = (
        UniqueConstraint("owner_id", "idempotency_key"),
        Index("ix_workflows_owner_created", "owner_id", "created_at", "id"),
        Index("ix_workflows_state", "state"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    name: Mapped[str] = mapped_column(String(255))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16))
    fail_fast: Mapped[bool] = mapped_column(Boolean, default=False)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    idempotency_key: Mapped[str | None] = mapped_column(String(255), default=None)
    request_hash: Mapped[str] = mapped_column(String(64), default="")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    ended_at: Mapped[datetime | None] = mapped_column(default=None)


class WorkflowStep(Base):
    """One step instance: its id in the plan (`solve[2]`), step name, matrix values, the
    job that runs it now, its state (workflows.readiness.StepState) and retries."""

    __tablename__ = "workflow_steps"

    workflow_id: Mapped[str] = mapped_column(ForeignKey("workflows.id"), primary_key=True)
    instance: Mapped[str] = mapped_column(String(80), primary_key=True)
    position: Mapped[int] = mapped_column(Integer)
    step: Mapped[str] = mapped_column(String(64))
    # The matrix combination as text (`n=4, mesh=fine`); "" for a step without a matrix.
    matrix_key: Mapped[str] = mapped_column(Text, default="")
    job_id: Mapped[str | None] = mapped_column(ForeignKey("jobs.id"), index=True,
                                               default=None)
    state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text, default=None)
    # Failed attempts so far (each a job of its own); a retry is due at `retry_at`.
    failures: Mapped[int] = mapped_column(Integer, default=0)
    retry_at: Mapped[datetime | None] = mapped_column(default=None)


class WorkflowEvent(Base):
    """Something that happened to a workflow or one of its instances, oldest first."""

    __tablename__ = "workflow_events"
    __table_args__ = (Index("ix_workflow_events_workflow", "workflow_id", "id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    workflow_id: Mapped[str] = mapped_column(ForeignKey("workflows.id"))
    at: Mapped[datetime] = mapped_column(default=utcnow)
    instance: Mapped[str | None] = mapped_column(String(80), default=None)
    state: Mapped[str] = mapped_column(String(16))
    message: Mapped[str] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(String(255))
