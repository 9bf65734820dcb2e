"""Writing the events that are not a job's state change (placements, attempts' states,
site states, allocation usage, status and refusals: gateway.schemas.events), in the
transaction of the change each reports: no event without its change, no change without
its event."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

from gateway.db.models import Event
from gateway.repositories.events import signal


@dataclass(frozen=True)
class NewFact:
    """One event to record: about a job (`job_id`), or else a `subject` such as
    "site:<name>" and, for a project's facts, its `project_id`, for a user's (a
    workflow's), its `owner_id`."""

    type: str
    at: datetime
    actor: str
    data: Mapping[str, Any]
    job_id: str | None = None
    subject: str | None = None
    project_id: int | None = None
    owner_id: str | None = None

    def row(self) -> dict[str, Any]:
        return {"type": self.type, "at": self.at, "actor": self.actor,
                "data": dict(self.data), "job_id": self.job_id, "subject": self.subject,
                "project_id": self.project_id, "owner_id": self.owner_id}


def add(session: Session, fact: NewFact) -> None:
    """Append one event to the unit of work, written at its next flush in the order of
    the job state events added around it (gateway.repositories.jobs.events.add)."""
    session.add(Event(**fact.row()))
    signal.mark(session)


def add_all(session: Session, facts: Sequence[NewFact]) -> None:
    """Append the events to the unit of work's transaction (one statement)."""
    if facts:
        session.connection().execute(insert(Event), [fact.row() for fact in facts])
        signal.mark(session)
