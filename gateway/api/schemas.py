"""The API's responses built from query rows; the documents are `gateway.schemas`.

The shapes live in `gateway.schemas` (shared with the client); this module only fills
them from the server's rows, keeping the ORM and the wire format apart.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import Response

from gateway.domain.job_origin import JobOrigin
from gateway.repositories.jobs.queries import AttemptView, EventView, JobView
from gateway.repositories.jobs.relations import ArrayView
from gateway.schemas import to_json
from gateway.schemas.jobs import (
    AttemptOut,
    EventList,
    EventOut,
    JobArrayList,
    JobArrayOut,
    JobList,
    JobOut,
)
from gateway.schemas.sites import Health, SiteList, SiteOut

__all__ = ["EventList", "EventOut", "Health", "JobArrayList", "JobArrayOut", "JobList",
           "JobOut", "SiteList", "SiteOut", "array_out", "attempt_out", "event_out", "job_out",
           "json_response"]


def attempt_out(row: AttemptView) -> AttemptOut:
    """From an attempts row (attempt columns)."""
    return AttemptOut(number=row["number"], site=row["site_name"], native_id=row["native_id"],
                      state=row["state"], raw_state=row["raw_state"], reason=row["reason"],
                      exit_code=row["exit_code"],
                      step_exit_codes=None if row["step_exit_codes"] is None else [
                          int(code) for code in row["step_exit_codes"].split(",") if code],
                      submitted_at=row["submitted_at"],
                      started_at=row["started_at"], ended_at=row["ended_at"])


def job_out(row: JobView, attempts: Sequence[AttemptView]) -> JobOut:
    """From a job_queries row (job columns + project_name + owner_name) and its attempts
    (every route sends them: a list item and GET of one job are the same document)."""
    return JobOut(
        id=row["id"], name=row["name"], owner=row["owner_name"],
        project=row["project_name"], state=row["state"], reason=row["reason"],
        raw_state=row["raw_state"], site=row["site_name"], exit_code=row["exit_code"],
        cancel_requested=row["cancel_requested"], held=row["held"],
        array_job_id=row["array_job_id"], array_index=row["array_index"],
        origin=JobOrigin.of(row["origin"]).value, created_at=row["created_at"],
        updated_at=row["updated_at"], started_at=row["started_at"],
        ended_at=row["ended_at"], labels=dict(row["spec"].get("labels") or {}),
        spec=row["spec"],
        attempts=[attempt_out(a) for a in attempts],
    )


def array_out(row: ArrayView) -> JobArrayOut:
    """From a job_relations array row (with its owner's name and its tasks' states)."""
    return JobArrayOut(id=row["id"], name=row["name"], owner=row["owner_name"],
                       array=row["spec"], task_count=row["task_count"],
                       throttle=row["throttle"], created_at=row["created_at"],
                       task_states=row["task_states"])


def event_out(row: EventView) -> EventOut:
    """From an events row."""
    return EventOut(id=row["id"], at=row["at"], from_state=row["from_state"],
                    to_state=row["to_state"], reason=row["reason"], actor=row["actor"],
                    raw_state=row["raw_state"])


def json_response(document: Any, value: Any, status: int = 200,
                  headers: dict[str, str] | None = None) -> Response:
    """`value` as JSON in the shape of `document`, serialized once. Routes still declare
    `response_model` for the OpenAPI document; returning a Response skips FastAPI's
    second validation."""
    return Response(to_json(document, value), status_code=status, headers=headers,
                    media_type="application/json")
