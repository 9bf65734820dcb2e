"""Events: the append-only history of every state change of a job; each is also an entry
of the audit log."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert, text
from sqlalchemy.orm import Session

from gateway.accounting.audit_entry import as_json
from gateway.db.models import Event
from gateway.repositories.events import signal as event_signal
from gateway.repositories.money import audit


@dataclass(frozen=True)
class NewEvent:
    """One state change to record."""

    job_id: str
    at: datetime
    from_state: str | None
    to_state: str
    reason: str | None
    actor: str
    raw_state: str | None = None

    def row(self) -> dict[str, Any]:
        # By hand: dataclasses.asdict deep-copies, and this is on the submit path.
        return {"job_id": self.job_id, "at": self.at, "from_state": self.from_state,
                "to_state": self.to_state, "reason": self.reason, "actor": self.actor,
                "raw_state": self.raw_state}

    def log(self, session: Session, carried: Mapping[str, Any] | None = None) -> None:
        """Log the state change in the audit trail (written at commit), carrying the entry
        of what the same statement did, if anything (`kind` and data: the lien of
        gateway.repositories.money.fast_hold): one entry for both."""
        audit.append(session, *self.entry(carried))
        # Every writer of an event logs it: the one place to say events were written.
        event_signal.mark(session)

    def entry(self, carried: Mapping[str, Any] | None = None
              ) -> tuple[str, str, str, dict[str, Any], datetime]:
        """Its audit entry: kind, subject, actor, data, time."""
        data: dict[str, Any] = {"from": self.from_state, "to": self.to_state,
                                "reason": self.reason, "raw_state": self.raw_state}
        if carried is not None:
            data["carried"] = carried
        return "job.state", f"job:{self.job_id}", self.actor, data, self.at


def add(session: Session, event: NewEvent) -> None:
    """Append an event to the unit of work (written at its next flush)."""
    session.add(Event(**event.row()))
    event.log(session)


# The submit path on PostgreSQL: the event and its audit entry in one round trip.
_EVENT_AND_ENTRY = text("""
WITH ev AS (
  INSERT INTO events (job_id, at, from_state, to_state, reason, actor, raw_state)
  VALUES (:job_id, :at, :from_state, :to_state, :reason, :actor, :raw_state)
)
INSERT INTO audit_events (at, kind, subject, actor, data)
VALUES (:at, :kind, :subject, :actor, CAST(:data AS json))
""")


def insert_now(session: Session, event: NewEvent) -> None:
    """Append an event with one Core statement (the submit path); on PostgreSQL its audit
    entry is written by the same statement."""
    conn = session.connection()
    if conn.dialect.name != "postgresql":
        conn.execute(insert(Event), [event.row()])
        event.log(session)
        return
    kind, subject, _, data, _ = event.entry()
    conn.execute(_EVENT_AND_ENTRY, {**event.row(), "kind": kind, "subject": subject,
                                    "data": json.dumps(as_json(data))})
    event_signal.mark(session)
