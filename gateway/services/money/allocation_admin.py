"""The committee's actions on allocations, as an administrator takes them: grant, adjust,
transfer, suspend and resume. Each checks the caller first (so a refusal says nothing of
what exists), then acts through `gateway.services.money.allocations`, whose ledger entries carry
the approver and the reason. Services flush; the caller commits."""

from __future__ import annotations

import logging
from collections.abc import Collection
from datetime import datetime

from sqlalchemy.orm import Session

from gateway.auth.project_access import require_admin
from gateway.db.bank_models import Allocation
from gateway.db.base import utcnow
from gateway.domain.errors import Invalid
from gateway.domain.principal import Principal
from gateway.services.money import allocations
from gateway.services.money.allocations import Grant
from rules.text import TextRule

log = logging.getLogger(__name__)

# One line a committee can read back: printable, at least one non-blank character.
REASON = TextRule("reason", r"(?=[^\x00-\x1f\x7f]*\S)[^\x00-\x1f\x7f]{1,500}",
                  "say why in one line of 1-500 printable characters")


def _approved(principal: Principal, reason: str) -> str:
    require_admin(principal)
    problem = REASON.problem(reason)
    if problem is not None:
        raise Invalid(f"{problem}.", field="reason")
    return principal.display


def grant(session: Session, principal: Principal, g: Grant, sites: Collection[str],
          reason: str, now: datetime) -> Allocation:
    """A new allocation for `g.project`, its award deposited."""
    approver = _approved(principal, reason)
    return allocations.grant(session, g, set(sites), approver, reason, now)


def adjust(session: Session, principal: Principal, allocation_id: int, amount_milli: int,
           reason: str, now: datetime) -> Allocation:
    """Add SU to (or, negative, take SU back from) an allocation."""
    approver = _approved(principal, reason)
    return allocations.adjust(session, allocation_id, amount_milli, approver, reason, now)


def transfer(session: Session, principal: Principal, source_id: int, target_id: int,
             amount_milli: int, reason: str, now: datetime) -> None:
    """Move SU between two allocations."""
    approver = _approved(principal, reason)
    allocations.transfer(session, source_id, target_id, amount_milli, approver, reason, now)


def set_status(session: Session, principal: Principal, allocation_id: int, status: str,
               reason: str) -> Allocation:
    """Suspend an allocation (no new liens; held ones settle) or make it active again.
    The ledger has no entry for this (nothing moves): the approver and reason go to the
    audit log and the gateway's log."""
    approver = _approved(principal, reason)
    allocation = allocations.set_status(session, allocation_id, status, approver, reason,
                                        utcnow())
    log.info("allocation %s %s by %s: %s", allocation_id, status, approver, reason)
    return allocation
