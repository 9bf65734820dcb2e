"""The double-entry ledger: every movement of service units is one transaction whose legs
sum to zero, appended, never changed. Services flush; the caller commits.

Accounts per allocation: `funding` (where grants come from: negative), `available` and
`used` (charges net of refunds). Liens are reservations outside the ledger
(gateway.services.money.bank): the allocation row splits the ledger's `available` into its
`available_milli` and `held_milli` (the open liens). A `held` account remains for the
legs liens wrote before that design; the two are summed wherever the ledger is read. So,
for every allocation and at every commit: available + held = the ledger's available +
held = deposits - charges + refunds, and awarded = -funding. The allocation row keeps
these sums (written here, in the same transaction as the legs), and its row lock is
what makes a lien or a charge atomic. Every transaction is also one link of the audit
chain (kind = the posting's kind, with its legs and their seal: the sha256 of everything
its ledger rows hold, gateway.accounting.ledger_seal, which `gridgate audit verify`
recomputes from the rows).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from gateway.accounting.ledger_seal import SealedLeg, seal
from gateway.db.bank_models import Allocation
from gateway.repositories.money import audit, bank_rows
from gateway.services.money import allocation_events

ACCOUNTS = ("funding", "available", "held", "used")
# What new legs may move: `held` is read (older liens' legs), never written.
POSTED = ("funding", "available", "used")
KINDS = ("deposit", "transfer", "adjustment", "charge", "refund")


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
    used_before = {leg.allocation.id: leg.allocation.used_milli for leg in legs}
    rows = []
    written = []
    sealed = []
    for leg in legs:
        if leg.account not in POSTED:
            raise ValueError(f"unknown ledger account {leg.account!r}")
        if leg.amount_milli == 0:
            continue
        rows.append({
            "txn": txn, "at": posting.at, "allocation_id": leg.allocation.id,
            "account": leg.account, "amount_milli": leg.amount_milli, "kind": posting.kind,
            "job_id": posting.job_id, "lien_id": posting.lien_id,
            "usage_id": posting.usage_id, "reason": posting.reason, "actor": posting.actor})
        _apply(leg)
        written.append((leg.allocation.id, leg.account, leg.amount_milli))
        sealed.append(SealedLeg(
            leg.allocation.id, leg.allocation.project_id, leg.account, leg.amount_milli,
            posting.at, posting.kind, posting.actor, posting.reason, posting.job_id,
            posting.lien_id, posting.usage_id))
    bank_rows.stage_legs(session, rows)
    audit.posting(session, posting.kind, posting.actor, posting.at, txn, posting.reason,
                  posting.job_id, posting.lien_id, posting.usage_id, written,
                  seal(txn, sealed))
    for allocation in {leg.allocation.id: leg.allocation for leg in legs
                       if leg.account == "used"}.values():
        allocation_events.usage_passed(session, allocation, used_before[allocation.id],
                                       posting.at, posting.actor)
    return txn


def _apply(leg: Leg) -> None:
    a = leg.allocation
    if leg.account == "funding":
        a.awarded_milli -= leg.amount_milli
    elif leg.account == "available":
        a.available_milli += leg.amount_milli
    else:
        a.used_milli += leg.amount_milli


def lock(session: Session, allocation_ids: Sequence[int]) -> list[Allocation]:
    """The allocations, rows locked in id order (one order everywhere: no deadlocks)."""
    return bank_rows.lock(session, allocation_ids)


def sums_as_of(session: Session, allocation_id: int, as_of: datetime | None = None
               ) -> dict[str, int]:
    """Each account's balance from the ledger itself, at `as_of` (default: now)."""
    return bank_rows.sums_as_of(session, allocation_id, ACCOUNTS, as_of)
