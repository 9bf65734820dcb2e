"""What the API sends back. Separate from the ORM models on purpose."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from fastapi import Response
from pydantic import BaseModel


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
    def from_row(cls, row: Mapping[Any, Any]) -> AttemptOut:
        return cls(number=row["number"], site=row["site_name"], native_id=row["native_id"],
                   state=row["state"], raw_state=row["raw_state"], reason=row["reason"],
                   exit_code=row["exit_code"], submitted_at=row["submitted_at"],
                   started_at=row["started_at"], ended_at=row["ended_at"])


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
    def from_row(cls, row: Mapping[Any, Any],
                 attempts: Sequence[Mapping[Any, Any]] | None = None) -> JobOut:
        """From a job_queries row (job columns + project_name + owner_name)."""
        return cls(
            id=row["id"], name=row["name"], owner=row["owner_name"],
            project=row["project_name"], state=row["state"], state_reason=row["state_reason"],
            raw_state=row["raw_state"], site=row["site_name"], exit_code=row["exit_code"],
            cancel_requested=row["cancel_requested"], created_at=row["created_at"],
            updated_at=row["updated_at"], started_at=row["started_at"],
            finished_at=row["finished_at"], labels=dict(row["spec"].get("labels") or {}),
            spec=row["spec"],
            attempts=None if attempts is None else [AttemptOut.from_row(a) for a in attempts],
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
    def from_row(cls, row: Mapping[Any, Any]) -> EventOut:
        return cls(id=row["id"], at=row["at"], from_state=row["from_state"],
                   to_state=row["to_state"], reason=row["reason"], actor=row["actor"],
                   raw_state=row["raw_state"])


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
    # The local site: "sandbox" (each job confined) or "none" (jobs run as the gateway's
    # account; only that account may submit); null on other sites.
    isolation: str | None = None


class SiteList(BaseModel):
    items: list[SiteOut]


class Health(BaseModel):
    status: str
    database: str
    version: str


def json_response(model: BaseModel, status: int = 200,
                  headers: dict[str, str] | None = None) -> Response:
    """The model as JSON, serialized once. Routes still declare `response_model` for
    the OpenAPI document; returning a Response skips FastAPI's second validation."""
    return Response(model.model_dump_json(), status_code=status, headers=headers,
                    media_type="application/json")
