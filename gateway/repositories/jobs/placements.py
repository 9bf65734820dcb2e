"""Placements: the routing decisions, one row each, as they were made (append-only); each
is also an entry of the audit log."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, insert, select
from sqlalchemy.orm import Session

from gateway.db.models import Placement
from gateway.repositories.events import facts
from gateway.repositories.money import audit
from gateway.schemas.events import JOB_PLACEMENT_TYPE
from gateway.schemas.placements import predicted_start

_placements = Placement.__table__


@dataclass(frozen=True)
class NewPlacement:
    """A decision to record; `candidates` are CandidateOut documents; `guest_of` and
    `guest_work`, the guest ledger's entry (the home the job left, the processor-seconds
    it holds at its first choice), None when it stayed home or had none."""

    job_id: str
    decided_at: datetime
    policy: str
    hedge: int
    deadline: datetime | None
    chosen: Sequence[str]
    why: str
    candidates: Sequence[dict[str, Any]]
    guest_of: str | None = None
    guest_work: int | None = None

    def row(self) -> dict[str, Any]:
        return {"job_id": self.job_id, "decided_at": self.decided_at, "policy": self.policy,
                "hedge": self.hedge, "deadline": self.deadline, "chosen": list(self.chosen),
                "why": self.why, "candidates": list(self.candidates),
                "guest_of": self.guest_of, "guest_work": self.guest_work}


@dataclass(frozen=True)
class PlacementRecord(NewPlacement):
    """A recorded decision."""

    id: int = 0


def add_all(session: Session, placements: Sequence[NewPlacement], actor: str) -> None:
    """Record the decisions (one statement for a routing pass's batch)."""
    if not placements:
        return
    session.connection().execute(insert(Placement), [p.row() for p in placements])
    facts.add_all(session, [facts.NewFact(
        JOB_PLACEMENT_TYPE, p.decided_at, actor, job_id=p.job_id,
        data={"policy": p.policy, "chosen": list(p.chosen), "why": p.why, "hedge": p.hedge,
              "deadline": None if p.deadline is None else p.deadline.isoformat(),
              "predicted_start": _start(p)})
        for p in placements])
    for p in placements:
        audit.append(session, "routing.decision", f"job:{p.job_id}", actor,
                     {"policy": p.policy, "hedge": p.hedge, "chosen": list(p.chosen),
                      "deadline": None if p.deadline is None else p.deadline.isoformat(),
                      "why": p.why}, p.decided_at)


def _start(placement: NewPlacement) -> str | None:
    # As a prediction event says it (RFC 3339, UTC): the first a watcher is told.
    start = predicted_start(placement.decided_at, placement.candidates, placement.chosen)
    return None if start is None else start.astimezone(UTC).isoformat().replace("+00:00", "Z")


def latest(conn: Connection, job_id: str) -> PlacementRecord | None:
    """The job's most recent decision (the one it was placed by), or None."""
    row = conn.execute(
        select(_placements).where(_placements.c.job_id == job_id)
        .order_by(_placements.c.id.desc()).limit(1)).mappings().first()
    if row is None:
        return None
    return PlacementRecord(job_id=row["job_id"], decided_at=row["decided_at"],
                           policy=row["policy"], hedge=row["hedge"], deadline=row["deadline"],
                           chosen=tuple(row["chosen"]), why=row["why"],
                           candidates=tuple(row["candidates"]), id=row["id"])


def recent_guests(session: Session, limit: int) -> list[tuple[str | None, str, int]]:
    """The guest ledger's entries of the last `limit` decisions, oldest first: (the home
    the job left or None, its first choice, processor-seconds or 0)."""
    rows = session.execute(select(_placements.c.guest_of, _placements.c.chosen,
                                  _placements.c.guest_work)
                           .order_by(_placements.c.id.desc()).limit(limit)).all()
    return [(home, chosen[0], work or 0) for home, chosen, work in reversed(rows)]


@dataclass(frozen=True)
class GivenForecast:
    """What a job's routing decision forecast at one site, as routing learns from it once
    the job has started there: the median before the site's routed-outcomes factor (that
    factor's own scoring), the walltime projection of the wait (the history class the
    wait is recorded in; None in decisions recorded before it was kept), what the
    late-wait model knew of the job (its features by name; None: not recorded) and the
    95% bound of the job's wait class (`Forecast.class_bound`, what the bounds are
    calibrated against; None: no history answered, or recorded before it was kept)."""

    uncalibrated_median: float
    projected_wait: float | None
    late_features: dict[str, float] | None = None
    class_bound: float | None = None


def given_forecasts(session: Session, job_ids: Collection[str]
                    ) -> dict[tuple[str, str], GivenForecast]:
    """(job, site) -> what the job's latest routing decision forecast at that site."""
    found: dict[tuple[str, str], GivenForecast] = {}
    if not job_ids:
        return found
    rows = session.execute(select(_placements.c.job_id, _placements.c.candidates)
                           .where(_placements.c.job_id.in_(job_ids))
                           .order_by(_placements.c.id))
    for job_id, candidates in rows:  # later decisions overwrite earlier ones
        for candidate in candidates:
            forecast = candidate.get("forecast")
            if forecast is None:
                continue
            factor = float(forecast.get("calibration", 1.0))
            projected = forecast.get("projected_wait")
            late = forecast.get("late_features")
            class_bound = forecast.get("class_bound")
            found[(job_id, candidate["site"])] = GivenForecast(
                (1.0 + float(forecast["wait_median"])) / factor - 1.0,
                None if projected is None else float(projected),
                None if late is None else {str(k): float(v) for k, v in late.items()},
                None if class_bound is None else float(class_bound))
    return found
