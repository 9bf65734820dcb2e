"""What the API sends back. Separate from the ORM models on purpose."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel

from gateway.db.models import Attempt, Event
from gateway.services.jobs import JobView


class AttemptOut(BaseModel):
    number: int
    site: str
    native_id: str | None
    state: str
    raw_state: str | None
    reason: str | None
    exit_code: int | None
    submitted_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None

    @classmethod
    def of(cls, attempt: Attempt) -> AttemptOut:
        return cls(number=attempt.number, site=attempt.site_name, native_id=attempt.native_id,
                   state=attempt.state, raw_state=attempt.raw_state, reason=attempt.reason,
                   exit_code=attempt.exit_code, submitted_at=attempt.submitted_at,
                   started_at=attempt.started_at, ended_at=attempt.ended_at)


class JobOut(BaseModel):
    id: str
    name: str
    owner: str
    project: str
    state: str
    state_reason: str | None
    raw_state: str | None
    site: str | None
    exit_code: int | None
    cancel_requested: bool
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    labels: dict[str, str]
    spec: dict[str, Any]
    attempts: list[AttemptOut] | None = None

    @classmethod
    def of(cls, view: JobView, attempts: list[Attempt] | None = None) -> JobOut:
        job = view.job
        return cls(
            id=job.id, name=job.name, owner=view.owner, project=view.project, state=job.state,
            state_reason=job.state_reason, raw_state=job.raw_state, site=job.site_name,
            exit_code=job.exit_code, cancel_requested=job.cancel_requested,
            created_at=job.created_at, updated_at=job.updated_at, started_at=job.started_at,
            finished_at=job.finished_at, labels=dict(job.spec.get("labels") or {}),
            spec=job.spec,
            attempts=None if attempts is None else [AttemptOut.of(a) for a in attempts],
        )


class JobList(BaseModel):
    items: list[JobOut]
    next_cursor: str | None


class EventOut(BaseModel):
    id: int
    at: datetime
    from_state: str | None
    to_state: str
    reason: str | None
    actor: str
    raw_state: str | None

    @classmethod
    def of(cls, event: Event) -> EventOut:
        return cls(id=event.id, at=event.at, from_state=event.from_state,
                   to_state=event.to_state, reason=event.reason, actor=event.actor,
                   raw_state=event.raw_state)


class EventList(BaseModel):
    items: list[EventOut]


class SiteOut(BaseModel):
    name: str
    kind: str
    description: str
    enabled: bool
    drained: bool
    status: str
    status_reason: str | None
    max_nodes: int
    cores_per_node: int
    memory_mb_per_node: int | None
    max_walltime_seconds: int
    mpi_launchers: list[str]
    mpi_flavors: list[str]
    max_jobs: int


class SiteList(BaseModel):
    items: list[SiteOut]


class Health(BaseModel):
    status: str
    database: str
    version: str
