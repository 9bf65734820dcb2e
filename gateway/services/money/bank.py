"""The bank: grants, liens and charges on allocations. Services flush; the caller commits.

A job's funds move in three steps: at submit a lien for its quote is held (so a project
can never have more accepted work than it can pay for: the check and the hold are one
atomic step under the allocations' row locks); when the job is routed the lien is drawn
again for the chosen site's quote; when it ends it is settled from the site's usage
records (charge, refund, the rest released), or released whole if it never ran.

A lien is a reservation, as in Gold/MAM: a row of its own (`liens`: amount, opened,
closed) and the allocation's `held_milli`, never ledger legs; the ledger moves money
only (deposits, transfers, adjustments, charges, refunds). Taking or releasing a lien
moves its amount between the allocation's `available_milli` and `held_milli` and is a
entry of the audit log (kind `lien` or `release`); a charge drawn from a lien releases
that much of it and charges it from `available`. So the ledger's `available` (with the
`held` legs of liens taken before this design) is the allocation's available plus held.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.orm import Session

from gateway.accounting.charging import Charge
from gateway.accounting.units import su
from gateway.db.bank_models import Allocation, Lien
from gateway.domain.errors import Invalid
from gateway.repositories.money import audit, bank_rows
from gateway.services.money import ledger
from gateway.services.money.ledger import Leg, Posting


class ChargedRecord(Protocol):
    """A stored usage record as the bank charges it (a UsageRow, or its columns)."""

    id: int
    job_id: str | None
    charged_milli: int | None
    refunded_milli: int
    rule: str | None


@dataclass(frozen=True)
class Payer:
    """The project that pays for a job."""

    project_id: int
    project_name: str


@dataclass(frozen=True)
class Refusal:
    """A lien refused, as its event says it (gateway.services.money.refusals): `asked`
    at `site` (None: any), `available` there, the allocation that would have been
    drawn first (None: none can pay there); the job's name once the caller knows it."""

    payer: Payer
    site: str | None
    asked_milli: int
    available_milli: int
    allocation_id: int | None
    job_name: str | None = None


class InsufficientFunds(Invalid):
    """No allocation of the project can cover the quote. `refusal` says so for its
    event, apart from `extra` (the problem document)."""

    title = "Insufficient allocation"

    def __init__(self, detail: str, refusal: Refusal | None = None, **extra: Any) -> None:
        super().__init__(detail, **extra)
        self.refusal = refusal


def payable(session: Session, project_id: int, site: str | None, now: datetime
            ) -> list[Allocation]:
    """The project's allocations that can pay at `site` now (None: at any site),
    earliest-ending first."""
    return bank_rows.payable(session, project_id, site, now)


def spendable(allocation: Allocation) -> int:
    """What a new lien or charge may still draw from this allocation."""
    return max(0, allocation.available_milli + allocation.credit_limit_milli)


def hold(session: Session, job_id: str, payer: Payer, site: str | None, amount_milli: int,
         now: datetime, actor: str) -> list[Lien]:
    """Hold `amount_milli` for the job from allocations that can pay at `site`,
    earliest-ending first. Raises InsufficientFunds (nothing held) when they cannot."""
    candidates = payable(session, payer.project_id, site, now)
    locked = {a.id: a for a in ledger.lock(session, [a.id for a in candidates])}
    # Re-read under the lock, in draw order (a concurrent hold may have spent some).
    ordered = [locked[a.id] for a in candidates if locked[a.id].status == "active"]
    total = sum(spendable(a) for a in ordered)
    if total < amount_milli:
        where = f"at site '{site}'" if site else "at any site"
        raise InsufficientFunds(
            f"Project '{payer.project_name}' cannot cover this job {where}: it would cost "
            f"{su(amount_milli)} SU and its allocations there have {su(total)} SU available. "
            "Ask for less (fewer cores or a shorter walltime), choose another site, or ask "
            "the project's PI for a larger allocation.",
            Refusal(payer, site, amount_milli, total,
                    (ordered or candidates)[0].id if candidates else None),
            quote_su=su(amount_milli), available_su=su(total), project=payer.project_name)
    liens: list[Lien] = []
    remaining = amount_milli
    for allocation in ordered:
        if remaining == 0:
            break
        take = min(remaining, spendable(allocation))
        if take == 0:
            continue
        lien = Lien(job_id=job_id, allocation_id=allocation.id, site_name=site,
                    amount_milli=take, status="held", created_at=now)
        bank_rows.add(session, lien)
        session.flush()
        _move(allocation, take)
        audit.lien(session, "lien", actor, now, job_id,
                   audit.lien_data(lien.id, allocation.id, take, f"held for job {job_id}"))
        liens.append(lien)
        remaining -= take
    return liens


def held_liens(session: Session, job_id: str) -> list[Lien]:
    """The job's liens still held, oldest first, rows locked."""
    return bank_rows.held_liens(session, [job_id])


def release(session: Session, job_id: str, now: datetime, actor: str, reason: str) -> int:
    """Release every lien the job still holds; returns the milli-SU released."""
    liens = held_liens(session, job_id)
    allocations = {a.id: a for a in ledger.lock(session, [lien.allocation_id for lien in liens])}
    released = 0
    for lien in liens:
        _close(session, lien, allocations[lien.allocation_id], lien.amount_milli, now, actor,
               reason, status="released")
        released += lien.amount_milli
    return released


def rehold(session: Session, job_id: str, payer: Payer, site: str, amount_milli: int,
           now: datetime, actor: str) -> list[Lien]:
    """Draw the job's lien again for `site` (its routing chose it): the old liens are
    released and the new one held in one step. Raises InsufficientFunds (nothing changed
    once the caller rolls back) when the project cannot pay there. A lien already drawn
    for that site and amount (the quote routing chose at submit) stays as it is."""
    held = held_liens(session, job_id)
    if held and all(lien.site_name == site for lien in held) and sum(
            lien.amount_milli for lien in held) == amount_milli:
        return held
    release(session, job_id, now, actor, f"drawn again for site '{site}'")
    return hold(session, job_id, payer, site, amount_milli, now, actor)


def _move(allocation: Allocation, amount_milli: int) -> None:
    """Hold `amount_milli` more of the allocation for a lien (negative: release it)."""
    allocation.available_milli -= amount_milli
    allocation.held_milli += amount_milli


def _close(session: Session, lien: Lien, allocation: Allocation, rest: int, now: datetime,
           actor: str, reason: str, status: str) -> None:
    if rest:
        _move(allocation, -rest)
        audit.lien(session, "release", actor, now, lien.job_id,
                   audit.lien_data(lien.id, allocation.id, rest, reason))
    lien.status = status
    lien.closed_at = now


@dataclass(frozen=True)
class Settled:
    """What settling a job's usage did."""

    charged_milli: int
    refunded_milli: int
    released_milli: int
    # Charged less than the rules said: the allocations ran dry (credit limit reached).
    short_milli: int


def settle(session: Session, job_id: str, charges: Sequence[tuple[ChargedRecord, Charge]],
           now: datetime, actor: str) -> Settled:
    """Charge each new usage record (once: a record already charged is skipped), from the
    job's liens first and then from its allocations' available funds down to their
    credit limit; refund what the rules refund; release the rest of the liens."""
    liens = held_liens(session, job_id)
    pay_from = _paying_allocations(session, job_id, liens)
    locked = {a.id: a for a in ledger.lock(session, [a.id for a in pay_from])}
    return settle_locked(session, liens, [locked[a.id] for a in pay_from], charges, now, actor)


def settle_locked(session: Session, liens: Sequence[Lien], pay_from: Sequence[Allocation],
                  charges: Sequence[tuple[ChargedRecord, Charge]], now: datetime, actor: str
                  ) -> Settled:
    """`settle` for one job whose held liens and paying allocations the caller has
    locked (many jobs at once: gateway.services.money.settlement)."""
    allocations = {a.id: a for a in pay_from}
    remaining = {lien.id: lien.amount_milli for lien in liens}
    total = Settled(0, 0, 0, 0)
    for row, charge in charges:
        if row.charged_milli is not None:
            continue  # this record was applied before: replaying it changes nothing
        paid, short = _charge(session, row, charge, liens, remaining, pay_from, allocations,
                              now, actor)
        total = Settled(total.charged_milli + paid, total.refunded_milli + row.refunded_milli,
                        0, total.short_milli + short)
    released = 0
    for lien in liens:
        _close(session, lien, allocations[lien.allocation_id], remaining[lien.id], now, actor,
               "the rest of the lien after the charge", status="settled")
        released += remaining[lien.id]
    return Settled(total.charged_milli, total.refunded_milli, released, total.short_milli)


def _paying_allocations(session: Session, job_id: str, liens: Sequence[Lien]
                        ) -> list[Allocation]:
    """The allocations the job's liens drew on (its last liens, if all are closed)."""
    if liens:
        ids = list(dict.fromkeys(lien.allocation_id for lien in liens))
    else:
        last = bank_rows.last_lien(session, job_id)
        ids = [] if last is None else [last.allocation_id]
    return bank_rows.allocations(session, ids)


def _charge(session: Session, row: ChargedRecord, charge: Charge, liens: Sequence[Lien],
            remaining: dict[int, int], pay_from: Sequence[Allocation],
            allocations: dict[int, Allocation], now: datetime, actor: str) -> tuple[int, int]:
    due = charge.amount_milli
    legs_by: list[tuple[Lien | None, Allocation, int]] = []
    for lien in liens:
        take = min(due, remaining[lien.id])
        if take:
            legs_by.append((lien, allocations[lien.allocation_id], take))
            remaining[lien.id] -= take
            due -= take
    for allocation in pay_from:
        take = min(due, spendable(allocation))
        if take:
            legs_by.append((None, allocation, take))
            due -= take
    for drawn, allocation, amount in legs_by:
        if drawn is not None:
            _move(allocation, -amount)  # that much of the lien is released to be charged
        ledger.post(session, Posting("charge", now, actor, charge.rule, row.job_id,
                                     drawn.id if drawn else None, row.id),
                    [Leg(allocation, "available", -amount), Leg(allocation, "used", amount)])
    paid = charge.amount_milli - due
    refund = min(charge.refund_milli, paid)
    if refund and legs_by:
        allocation = legs_by[0][1]
        ledger.post(session, Posting("refund", now, actor, charge.rule, row.job_id, None,
                                     row.id),
                    [Leg(allocation, "used", -refund), Leg(allocation, "available", refund)])
    row.charged_milli = paid
    row.refunded_milli = refund
    row.rule = charge.rule if not due else (
        f"{charge.rule}; {su(due)} SU could not be charged: the allocation ran out")
    return paid, due
