"""The bank's rows: allocations (locked for a lien or a charge), liens, quotes, and the
ledger's legs (written in bulk with the unit of work's next flush)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, event, func, select
from sqlalchemy.orm import Session

from gateway.db.bank_models import FEDERATION_POOL, Allocation, LedgerEntry, Lien, Quote
from gateway.repositories import bulk

_PENDING = "gridgate.ledger.pending"
_LEDGER = cast(Table, LedgerEntry.__table__)


def add(session: Session, row: Allocation | Lien | Quote) -> None:
    """Stage a new allocation, lien or quote; flush before using its id."""
    session.add(row)


def payable(session: Session, project_id: int, site: str | None, now: datetime
            ) -> list[Allocation]:
    """The project's allocations that can pay at `site` now (None: at any site),
    earliest-ending first."""
    query = select(Allocation).where(
        Allocation.project_id == project_id, Allocation.status == "active",
        Allocation.starts_at <= now, Allocation.ends_at > now)
    if site is not None:
        query = query.where(Allocation.pool.in_((site, FEDERATION_POOL)))
    return sorted(session.scalars(query), key=lambda a: (a.ends_at, a.id))


def lock(session: Session, allocation_ids: Collection[int]) -> list[Allocation]:
    """The allocations, rows locked in id order (one order everywhere: no deadlocks)."""
    if not allocation_ids:
        return []
    return list(session.scalars(
        select(Allocation).where(Allocation.id.in_(sorted(set(allocation_ids))))
        .order_by(Allocation.id).with_for_update().execution_options(populate_existing=True)))


def allocations(session: Session, allocation_ids: Collection[int]) -> list[Allocation]:
    """These allocations (not locked)."""
    return list(session.scalars(select(Allocation).where(
        Allocation.id.in_(list(allocation_ids)))))


def held_liens(session: Session, job_ids: Collection[str]) -> list[Lien]:
    """The jobs' liens still held, by job then age, rows locked."""
    return list(session.scalars(
        select(Lien).where(Lien.job_id.in_(list(job_ids)), Lien.status == "held")
        .order_by(Lien.job_id, Lien.id).with_for_update()))


def last_lien(session: Session, job_id: str) -> Lien | None:
    """The job's newest lien, held or not."""
    return session.scalars(select(Lien).where(Lien.job_id == job_id)
                           .order_by(Lien.id.desc())).first()


def stage_legs(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Queue ledger legs (LedgerEntry columns) for the unit of work's next flush."""
    session.info.setdefault(_PENDING, []).extend(rows)


@event.listens_for(Session, "before_flush")
def _write_pending(session: Session, *_: object) -> None:
    """Write the legs queued since the last flush, in one statement, in the same flush as
    the allocations' new sums: both or neither reach the database."""
    rows = session.info.pop(_PENDING, None)
    if rows:
        bulk.insert_rows(session.connection(), _LEDGER, rows)


@event.listens_for(Session, "after_rollback")
def _drop_pending(session: Session) -> None:
    session.info.pop(_PENDING, None)


def sums_as_of(session: Session, allocation_id: int, accounts: Sequence[str],
               as_of: datetime | None = None) -> dict[str, int]:
    """Each account's balance from the ledger itself, at `as_of` (default: now)."""
    query = (select(LedgerEntry.account, func.coalesce(func.sum(LedgerEntry.amount_milli), 0))
             .where(LedgerEntry.allocation_id == allocation_id)
             .group_by(LedgerEntry.account))
    if as_of is not None:
        query = query.where(LedgerEntry.at <= as_of)
    found = {account: int(total) for account, total in session.execute(query)}
    return {account: found.get(account, 0) for account in accounts}
