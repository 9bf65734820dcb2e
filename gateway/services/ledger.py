"""The double-entry ledger: every movement of service units is one transaction whose legs
sum to zero, appended, never changed. Services flush; the caller commits.

Accounts per allocation: `funding` (where grants come from: negative), `available`,
`held` (liens) and `used` (charges net of refunds). So, for every allocation and at
every commit: available = deposits - charges + refunds - held, and awarded = -funding.
The allocation row keeps these sums (written here, in the same transaction as the legs),
and its row lock is what makes a lien or a charge atomic.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from sqlalchemy import Table, event, func, select
from sqlalchemy.orm import Session

from gateway.db.bank_models import Allocation, LedgerEntry
from gateway.repositories import bulk

ACCOUNTS = ("funding", "available", "held", "used")
KINDS = ("deposit", "transfer", "adjustment", "lien", "release", "charge", "refund")


@dataclass(frozen=True)
class Leg:
    """One side of a transaction: `amount_milli` into (or, negative, out of) an account."""

    allocation: Allocation
    account: str
    amount_milli: int


@dataclass(frozen=True)
class Posting:
    """What a transaction is and who made it."""

    kind: str
    at: datetime
    actor: str
    reason: str | None = None
    job_id: str | None = None
    lien_id: int | None = None
    usage_id: int | None = None


def post(session: Session, posting: Posting, legs: Sequence[Leg]) -> str:
    """Append one balanced transaction and update the allocations' running sums; returns
    its id. The caller holds the allocations' row locks (`lock`). The legs are written
    with the unit of work's next flush, all transactions since the last one in a single
    statement (a settle step posts thousands)."""
    if posting.kind not in KINDS:
        raise ValueError(f"unknown ledger kind {posting.kind!r}")
    if sum(leg.amount_milli for leg in legs) != 0:
        raise ValueError("a ledger transaction's legs must sum to zero")
    txn = str(uuid.uuid4())
    pending = session.info.setdefault(_PENDING, [])
    for leg in legs:
        if leg.account not in ACCOUNTS:
            raise ValueError(f"unknown ledger account {leg.account!r}")
        if leg.amount_milli == 0:
            continue
        pending.append({
            "txn": txn, "at": posting.at, "allocation_id": leg.allocation.id,
            "account": leg.account, "amount_milli": leg.amount_milli, "kind": posting.kind,
            "job_id": posting.job_id, "lien_id": posting.lien_id,
            "usage_id": posting.usage_id, "reason": posting.reason, "actor": posting.actor})
        _apply(leg)
    return txn


_PENDING = "gridgate.ledger.pending"
_LEDGER = cast(Table, LedgerEntry.__table__)


@event.listens_for(Session, "before_flush")
def _write_pending(session: Session, *_: object) -> None:
    """Write the legs posted since the last flush (before the allocations' new sums, in
    the same flush, so both or neither reach the database)."""
    rows = session.info.pop(_PENDING, None)
    if rows:
        bulk.insert_rows(session.connection(), _LEDGER, rows)


@event.listens_for(Session, "after_rollback")
def _drop_pending(session: Session) -> None:
    session.info.pop(_PENDING, None)


def _apply(leg: Leg) -> None:
    a = leg.allocation
    if leg.account == "funding":
        a.awarded_milli -= leg.amount_milli
    elif leg.account == "available":
        a.available_milli += leg.amount_milli
    elif leg.account == "held":
        a.held_milli += leg.amount_milli
    else:
        a.used_milli += leg.amount_milli


def lock(session: Session, allocation_ids: Sequence[int]) -> list[Allocation]:
    """The allocations, rows locked in id order (one order everywhere: no deadlocks)."""
    if not allocation_ids:
        return []
    return list(session.scalars(
        select(Allocation).where(Allocation.id.in_(sorted(set(allocation_ids))))
        .order_by(Allocation.id).with_for_update().execution_options(populate_existing=True)))


def sums_as_of(session: Session, allocation_id: int, as_of: datetime | None = None
               ) -> dict[str, int]:
    """Each account's balance from the ledger itself, at `as_of` (default: now)."""
    query = (select(LedgerEntry.account, func.coalesce(func.sum(LedgerEntry.amount_milli), 0))
             .where(LedgerEntry.allocation_id == allocation_id)
             .group_by(LedgerEntry.account))
    if as_of is not None:
        query = query.where(LedgerEntry.at <= as_of)
    found = {account: int(total) for account, total in session.execute(query)}
    return {account: found.get(account, 0) for account in ACCOUNTS}
