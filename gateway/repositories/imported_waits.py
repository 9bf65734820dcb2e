"""Imported waits: a site's past queue waits from its own records (history import)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from gateway.db.models import ImportedWait


@dataclass(frozen=True)
class PastWaitRow:
    """One imported wait, as the wait history takes it."""

    site_name: str
    queue: str
    procs: int
    time_limit_seconds: float | None
    user: str | None
    wait_seconds: float
    started_at: datetime


def add_many(session: Session, site_name: str, source: str,
             waits: Sequence[PastWaitRow]) -> None:
    """Store the waits (one statement)."""
    if waits:
        session.execute(insert(ImportedWait), [
            {"site_name": site_name, "queue": w.queue, "procs": w.procs,
             "time_limit_seconds": w.time_limit_seconds, "user": w.user,
             "wait_seconds": w.wait_seconds, "started_at": w.started_at, "source": source}
            for w in waits])


def recent(session: Session, site_name: str, limit: int) -> list[PastWaitRow]:
    """The site's `limit` imported waits that started last, oldest first."""
    rows = session.execute(
        select(ImportedWait.site_name, ImportedWait.queue, ImportedWait.procs,
               ImportedWait.time_limit_seconds, ImportedWait.user, ImportedWait.wait_seconds,
               ImportedWait.started_at)
        .where(ImportedWait.site_name == site_name)
        .order_by(ImportedWait.started_at.desc(), ImportedWait.id.desc()).limit(limit)).all()
    return [PastWaitRow(*row) for row in reversed(rows)]
