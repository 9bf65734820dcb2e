"""The events of an allocation (gateway.schemas.events): its use passing a share of its
award, and its suspension or resumption. The project's PIs, admins and auditors read
them; each is written in the transaction of the change it reports."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from gateway.accounting.units import MILLI
from gateway.db.bank_models import Allocation
from gateway.repositories.events import facts
from gateway.repositories.identity import projects
from gateway.schemas.events import (
    ALLOCATION_STATUS_TYPE,
    ALLOCATION_USAGE_TYPE,
    USAGE_THRESHOLDS_PERCENT,
)


def crossed(used_before_milli: int, used_after_milli: int, awarded_milli: int
            ) -> list[int]:
    """The thresholds (percent of the award) that a change of use from before to after
    passed upwards: reached now, not reached before. None for an allocation awarded
    nothing (every share of nothing is reached at once)."""
    if awarded_milli <= 0:
        return []
    return [percent for percent in USAGE_THRESHOLDS_PERCENT
            if used_before_milli * 100 < percent * awarded_milli <= used_after_milli * 100]


def usage_passed(session: Session, allocation: Allocation, used_before_milli: int,
                 at: datetime, actor: str) -> None:
    """Record an event for each threshold the allocation's use just passed."""
    passed = crossed(used_before_milli, allocation.used_milli, allocation.awarded_milli)
    if not passed:
        return
    facts.add_all(session, [_fact(session, allocation, ALLOCATION_USAGE_TYPE, at, actor, {
        "threshold_percent": percent, "used_su": allocation.used_milli / MILLI,
        "awarded_su": allocation.awarded_milli / MILLI}) for percent in passed])


def status_changed(session: Session, allocation: Allocation, before: str, actor: str,
                   reason: str, at: datetime) -> None:
    """Record an event for the allocation's status having changed from `before`."""
    if before != allocation.status:
        facts.add_all(session, [_fact(session, allocation, ALLOCATION_STATUS_TYPE, at, actor, {
            "from": before, "to": allocation.status, "reason": reason, "actor": actor})])


def _fact(session: Session, allocation: Allocation, kind: str, at: datetime, actor: str,
          data: dict[str, object]) -> facts.NewFact:
    name = projects.names(session, [allocation.project_id]).get(allocation.project_id, "")
    return facts.NewFact(kind, at, actor, subject=f"allocation:{allocation.id}",
                         project_id=allocation.project_id,
                         data={"allocation": allocation.id, "project": name,
                               "pool": allocation.pool, **data})
