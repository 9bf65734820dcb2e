"""Granting service units: allocations, deposits, adjustments and transfers, each with
its reason and approver in the ledger. Services flush; the caller commits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from gateway.accounting.units import su
from gateway.db.bank_models import FEDERATION_POOL, Allocation
from gateway.db.models import Project
from gateway.domain.errors import Invalid, NotFound
from gateway.repositories.identity import projects
from gateway.repositories.money import audit, bank_rows
from gateway.services.money import allocation_events, ledger
from gateway.services.money.bank import spendable
from gateway.services.money.ledger import Leg, Posting

STATUSES = ("active", "suspended")


@dataclass(frozen=True)
class Grant:
    """A new allocation: `amount_milli` for `project` at `pool` (a site, or '*')."""

    project: str
    pool: str
    amount_milli: int
    starts_at: datetime
    ends_at: datetime
    credit_limit_milli: int = 0


def project_by_name(session: Session, name: str) -> Project:
    """The project named `name`, or NotFound."""
    project = projects.by_name(session, name)
    if project is None:
        raise NotFound(f"No project named '{name}'.")
    return project


def grant(session: Session, g: Grant, sites: set[str], approver: str, reason: str,
          now: datetime) -> Allocation:
    """Create an allocation and deposit its award."""
    if g.pool != FEDERATION_POOL and g.pool not in sites:
        raise Invalid(f"No site named '{g.pool}'; a pool is a site's name or '*' for the "
                      "whole federation.", field="pool")
    if g.amount_milli <= 0:
        raise Invalid("An allocation grants a positive number of SU.", field="amount")
    if g.ends_at <= g.starts_at:
        raise Invalid("An allocation ends after it starts.", field="ends_at")
    if g.credit_limit_milli < 0:
        raise Invalid("A credit limit is zero or more SU.", field="credit_limit")
    project = project_by_name(session, g.project)
    allocation = Allocation(project_id=project.id, pool=g.pool, starts_at=g.starts_at,
                            ends_at=g.ends_at, status="active",
                            credit_limit_milli=g.credit_limit_milli, awarded_milli=0,
                            available_milli=0, held_milli=0, used_milli=0, created_at=now,
                            created_by=approver)
    bank_rows.add(session, allocation)
    session.flush()
    audit.append(session, "allocation.grant", f"allocation:{allocation.id}", approver,
                 {"project": project.name, "pool": g.pool, "amount_milli": g.amount_milli,
                  "starts_at": g.starts_at.isoformat(), "ends_at": g.ends_at.isoformat(),
                  "credit_limit_milli": g.credit_limit_milli, "reason": reason}, now)
    ledger.post(session, Posting("deposit", now, approver, reason),
                [Leg(allocation, "funding", -g.amount_milli),
                 Leg(allocation, "available", g.amount_milli)])
    return allocation


def _locked(session: Session, allocation_id: int) -> Allocation:
    found = ledger.lock(session, [allocation_id])
    if not found:
        raise NotFound(f"No allocation {allocation_id}.")
    return found[0]


def adjust(session: Session, allocation_id: int, amount_milli: int, approver: str,
           reason: str, now: datetime) -> Allocation:
    """Add (or, negative, take back) SU; never below what the allocation has spendable."""
    if not reason.strip():
        raise Invalid("An adjustment needs a reason the committee can read.", field="reason")
    allocation = _locked(session, allocation_id)
    if amount_milli == 0:
        raise Invalid("An adjustment changes the award by a non-zero amount.", field="amount")
    if -amount_milli > spendable(allocation):
        raise Invalid(f"Allocation {allocation_id} has {su(spendable(allocation))} SU "
                      f"spendable; it cannot give back {su(-amount_milli)} SU.",
                      field="amount")
    ledger.post(session, Posting("adjustment", now, approver, reason),
                [Leg(allocation, "funding", -amount_milli),
                 Leg(allocation, "available", amount_milli)])
    return allocation


def transfer(session: Session, source_id: int, target_id: int, amount_milli: int,
             approver: str, reason: str, now: datetime) -> None:
    """Move SU from one allocation to another (both locked, in id order)."""
    if amount_milli <= 0:
        raise Invalid("A transfer moves a positive number of SU.", field="amount")
    found = {a.id: a for a in ledger.lock(session, [source_id, target_id])}
    if source_id == target_id or len(found) != 2:
        raise NotFound("A transfer needs two different existing allocations.")
    source, target = found[source_id], found[target_id]
    if amount_milli > spendable(source):
        raise Invalid(f"Allocation {source_id} has {su(spendable(source))} SU spendable.",
                      field="amount")
    ledger.post(session, Posting("transfer", now, approver, reason),
                [Leg(source, "available", -amount_milli), Leg(target, "available", amount_milli)])


def set_status(session: Session, allocation_id: int, status: str, actor: str, reason: str,
               now: datetime) -> Allocation:
    """Suspend an allocation (no new liens) or make it active again."""
    if status not in STATUSES:
        raise Invalid(f"An allocation's status is one of {', '.join(STATUSES)}.", field="status")
    allocation = _locked(session, allocation_id)
    audit.append(session, "allocation.status", f"allocation:{allocation.id}", actor,
                 {"from": allocation.status, "to": status, "reason": reason}, now)
    before, allocation.status = allocation.status, status
    allocation_events.status_changed(session, allocation, before, actor, reason, now)
    session.flush()
    return allocation
