"""Allocations as read for balances and listings, with their project's name."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.db.bank_models import Allocation
from gateway.db.models import Project


def with_project(session: Session, project_ids: Sequence[int] | None
                 ) -> list[tuple[Allocation, str]]:
    """(allocation, project name) of these projects (None: of all), by project name, then
    earliest-ending first (the order liens draw on them)."""
    query = (select(Allocation, Project.name).join(Project, Project.id == Allocation.project_id)
             .order_by(Project.name, Allocation.ends_at, Allocation.id))
    if project_ids is not None:
        query = query.where(Allocation.project_id.in_(project_ids))
    return [(allocation, name) for allocation, name in session.execute(query)]


def by_id(session: Session, allocation_id: int) -> Allocation | None:
    """The allocation with this id (as this session has it)."""
    return session.get(Allocation, allocation_id)


def project_name(session: Session, project_id: int) -> str:
    """The name of the project with this id (it exists: allocations refer to it)."""
    name = session.scalar(select(Project.name).where(Project.id == project_id))
    assert name is not None, project_id
    return name
