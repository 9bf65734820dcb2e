"""Liens: funds of an allocation held for a job (written by gateway.services.money.bank)."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gateway.db.bank_models import Lien


def held_by_job(session: Session, job_ids: Collection[str]) -> dict[str, dict[int, int]]:
    """What each of these jobs holds now: job id -> allocation id -> milli-SU."""
    held: dict[str, dict[int, int]] = {}
    if not job_ids:
        return held
    for job_id, allocation_id, amount in session.execute(
            select(Lien.job_id, Lien.allocation_id, Lien.amount_milli)
            .where(Lien.job_id.in_(list(job_ids)), Lien.status == "held")):
        own = held.setdefault(job_id, {})
        own[allocation_id] = own.get(allocation_id, 0) + amount
    return held


def held_by_allocation(session: Session) -> dict[int, int]:
    """What the open liens hold now: allocation id -> milli-SU."""
    return {int(a): int(total) for a, total in session.execute(
        select(Lien.allocation_id, func.sum(Lien.amount_milli))
        .where(Lien.status == "held").group_by(Lien.allocation_id))}
