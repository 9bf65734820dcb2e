"""Projects and their members (what jobs are charged to)."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.db.models import Membership, Project


def name_taken(session: Session, name: str) -> bool:
    """Whether a project is named `name`."""
    return session.scalar(select(Project.id).where(Project.name == name)) is not None


def add(session: Session, project: Project) -> None:
    """Stage a new project; flush before using its id."""
    session.add(project)


def add_member(session: Session, project_id: int, user_id: str, role: str) -> None:
    """Make the user a member of the project with `role`."""
    session.add(Membership(project_id=project_id, user_id=user_id, role=role))


def names(session: Session, project_ids: Collection[int]) -> dict[int, str]:
    """Project id -> name, for each of these projects."""
    if not project_ids:
        return {}
    return {pid: name for pid, name in session.execute(
        select(Project.id, Project.name).where(Project.id.in_(list(project_ids))))}
