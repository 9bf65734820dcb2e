"""What projects have: their allocations, each with its status and running sums, read
under `project_access` (a project the caller may not read does not exist for them)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from gateway.auth.project_access import Access, access, is_auditor, visible_projects
from gateway.db.bank_models import Allocation
from gateway.domain.principal import Principal
from gateway.repositories.money import allocation_views


@dataclass(frozen=True)
class AllocationView:
    """An allocation, its project's name and its status now."""

    allocation: Allocation
    project: str
    status: str

    @property
    def in_force(self) -> bool:
        """Whether jobs may draw on it now."""
        return self.status == "active"


def status_of(allocation: Allocation, now: datetime) -> str:
    """expired (its end passed: final, whatever else), suspended, pending (not started)
    or active. Expiry is read from the dates, never stored late."""
    if allocation.ends_at <= now:
        return "expired"
    if allocation.status == "suspended":
        return "suspended"
    if allocation.starts_at > now:
        return "pending"
    return "active"


def views(session: Session, project_ids: Sequence[int] | None, now: datetime
          ) -> list[AllocationView]:
    """The allocations of these projects (None: of every project), by project, then
    earliest-ending first (the order liens draw on them)."""
    return [AllocationView(a, name, status_of(a, now))
            for a, name in allocation_views.with_project(session, project_ids)]


def available_now(found: Sequence[AllocationView]) -> int:
    """milli-SU the allocations in force may still spend (before credit)."""
    return sum(v.allocation.available_milli for v in found if v.in_force)


def project_balance(session: Session, principal: Principal, project: str, now: datetime
                    ) -> tuple[Access, list[AllocationView]]:
    """The project's allocations; NotFound when the caller may not read the project."""
    seen = access(session, principal, project)
    return seen, views(session, [seen.project.id], now)


def list_allocations(session: Session, principal: Principal, project: str | None,
                     now: datetime) -> list[AllocationView]:
    """The allocations of `project`, or of every project the caller may read."""
    if project is not None:
        return project_balance(session, principal, project, now)[1]
    if is_auditor(principal):  # admins too
        return views(session, None, now)
    return views(session, [a.project.id for a in visible_projects(session, principal)], now)


def view(session: Session, allocation: Allocation, now: datetime) -> AllocationView:
    """One allocation's view (after an action on it)."""
    return AllocationView(allocation, allocation_views.project_name(session, allocation.project_id),
                          status_of(allocation, now))


def view_of(session: Session, allocation_id: int, now: datetime) -> AllocationView:
    """The view of the allocation with this id (which exists: an action just used it)."""
    allocation = allocation_views.by_id(session, allocation_id)
    assert allocation is not None, allocation_id
    return view(session, allocation, now)
