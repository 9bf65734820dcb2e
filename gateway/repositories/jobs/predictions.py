"""Queued attempts' predicted starts: the one last announced for each (a column of the
attempt), read one site at a time with what the job's placement predicted, and the
announcement of a new one (the column and its event, in one transaction)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from sqlalchemy import Table, and_, bindparam, func, select, update
from sqlalchemy.orm import Session

from gateway.db.models import Attempt, Placement
from gateway.domain.states import AttemptState
from gateway.repositories.events import facts
from gateway.schemas.events import JOB_PREDICTION_TYPE

_attempts = cast(Table, Attempt.__table__)


@dataclass(frozen=True)
class Waiting:
    """An attempt queued at a site: how the site's queue names it (`native_id`, `tag`),
    the predicted start last announced for it and, until one was, the job's latest
    routing decision (`decided_at`, `candidates`; None for a job that named its site)."""

    attempt_id: int
    job_id: str
    native_id: str | None
    tag: str
    announced: datetime | None
    decided_at: datetime | None
    candidates: Sequence[dict[str, Any]] | None


@dataclass(frozen=True)
class Announcement:
    """A new predicted start of a queued attempt, and the one it replaces."""

    attempt_id: int
    job_id: str
    site: str
    predicted_start: datetime
    previous: datetime | None
    basis: str


def sites_with_queued(session: Session) -> list[str]:
    """The sites some attempt is queued at (one statement), by name."""
    return list(session.scalars(
        select(Attempt.site_name).where(Attempt.state == AttemptState.QUEUED)
        .distinct().order_by(Attempt.site_name)))


def queued_at(session: Session, site: str) -> list[Waiting]:
    """The attempts queued at `site` (one statement), locked: one that another worker is
    moving on right now (it started, say) is skipped, and waits for this transaction."""
    latest = (select(func.max(Placement.id)).where(Placement.job_id == Attempt.job_id)
              .correlate(Attempt).scalar_subquery())
    rows = session.execute(
        select(Attempt.id, Attempt.job_id, Attempt.native_id, Attempt.tag,
               Attempt.predicted_start, Placement.decided_at, Placement.candidates)
        # The decision is read only while no prediction was announced: it is the first.
        .outerjoin(Placement, and_(Attempt.predicted_start.is_(None), Placement.id == latest))
        .where(Attempt.site_name == site, Attempt.state == AttemptState.QUEUED)
        .order_by(Attempt.id)
        .with_for_update(of=Attempt, skip_locked=True)).all()
    return [Waiting(*row) for row in rows]


def announce(session: Session, announcements: Sequence[Announcement], at: datetime,
             actor: str) -> None:
    """Record each attempt's new predicted start and its event (two statements)."""
    if not announcements:
        return
    session.connection().execute(
        update(_attempts).where(_attempts.c.id == bindparam("attempt"))
        .values(predicted_start=bindparam("start")),
        [{"attempt": a.attempt_id, "start": a.predicted_start} for a in announcements])
    facts.add_all(session, [facts.NewFact(
        JOB_PREDICTION_TYPE, at, actor, job_id=a.job_id,
        data={"predicted_start": _iso(a.predicted_start),
              "previous": None if a.previous is None else _iso(a.previous),
              "site": a.site, "basis": a.basis})
        for a in announcements])


def _iso(moment: datetime) -> str:
    # RFC 3339 in UTC, as the events' `time`.
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
