"""Events: the append-only history of every state change of a job; each is also a link
of the audit chain."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert
from sqlalchemy.orm import Session

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

    def chain(self, session: Session, carried: Mapping[str, Any] | None = None) -> None:
        """Chain the state change into the audit trail (written at commit), carrying the
        link of what the same statement did, if anything (`kind` and data: the lien of
        gateway.repositories.money.fast_hold): one link for both."""
        data: dict[str, Any] = {"from": self.from_state, "to": self.to_state,
                                "reason": self.reason, "raw_state": self.raw_state}
        if carried is not None:
            data["carried"] = carried
        audit.append(session, "job.state", f"job:{self.job_id}", self.actor, data, self.at)
        # Every writer of an event chains it: the one place to say events were written.
        event_signal.mark(session)


def add(session: Session, event: NewEvent) -> None:
    """Append an event to the unit of work (written at its next flush)."""
    session.add(Event(**event.row()))
    event.chain(session)


def insert_now(session: Session, event: NewEvent) -> None:
    """Append an event with one Core statement (the submit path)."""
    session.connection().execute(insert(Event), [event.row()])
    event.chain(session)
