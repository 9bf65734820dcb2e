"""Projects and their members (what jobs are charged to)."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from gateway.db.models import Membership, Project, User

# The membership role of a project's PI: they see the project's jobs and usage.
PI_ROLE = "manager"


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


def by_name(session: Session, name: str) -> Project | None:
    """The project named `name`."""
    return session.scalar(select(Project).where(Project.name == name))


def membership(session: Session, project_id: int, user_id: str) -> Membership | None:
    """The user's membership of the project, row locked (roles change under it)."""
    return session.scalar(select(Membership).where(
        Membership.project_id == project_id, Membership.user_id == user_id).with_for_update())


def members(session: Session, project_id: int) -> list[tuple[str, str | None, str]]:
    """(user id, username, role) of every member, by username."""
    rows = session.execute(
        select(Membership.user_id, User.username, Membership.role)
        .join(User, User.id == Membership.user_id)
        .where(Membership.project_id == project_id)
        .order_by(User.username, Membership.user_id))
    return [(user_id, username, role) for user_id, username, role in rows]


def count_with_role(session: Session, project_id: int, role: str) -> int:
    """How many members hold `role` in the project."""
    return int(session.scalar(select(func.count()).select_from(Membership).where(
        Membership.project_id == project_id, Membership.role == role)) or 0)


def member_counts(session: Session, project_ids: Sequence[int]) -> dict[int, int]:
    """Members per project, for the projects given."""
    rows = session.execute(
        select(Membership.project_id, func.count()).where(Membership.project_id.in_(project_ids))
        .group_by(Membership.project_id))
    return {project_id: int(count) for project_id, count in rows}


def remove_member(session: Session, membership: Membership) -> None:
    """Stage the membership's removal."""
    session.delete(membership)


def role_of(session: Session, project_id: int, user_id: str) -> str | None:
    """The user's membership role in the project, if a member."""
    return session.scalar(select(Membership.role).where(
        Membership.project_id == project_id, Membership.user_id == user_id))


def all_projects(session: Session) -> list[Project]:
    """Every project, by name."""
    return list(session.scalars(select(Project).order_by(Project.name)))


def of_member(session: Session, user_id: str) -> list[tuple[Project, str]]:
    """(project, role) of every project the user is a member of, by name."""
    return [(p, role) for p, role in session.execute(
        select(Project, Membership.role).join(Membership, Membership.project_id == Project.id)
        .where(Membership.user_id == user_id).order_by(Project.name))]


def member_of_any(session: Session, username: str, names: Collection[str]) -> bool:
    """Whether the user holding `username` is a member of any of the projects `names`."""
    return session.scalar(
        select(Membership.user_id)
        .join(User, User.id == Membership.user_id)
        .join(Project, Project.id == Membership.project_id)
        .where(User.username == username, Project.name.in_(list(names))).limit(1)
    ) is not None
