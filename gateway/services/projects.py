"""Projects and who belongs to them: admins create projects; a project's PI (or an admin)
adds and removes members and names PIs. Who sees what is `project_access`'s rule.
Every change is also an entry of the audit log. Services flush; the caller commits."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from gateway.auth.project_access import (
    PI_ROLE,
    Access,
    Standing,
    access,
    require_admin,
    visible_projects,
)
from gateway.db.base import utcnow
from gateway.db.models import Membership, Project
from gateway.domain.errors import Conflict, Forbidden, Invalid
from gateway.domain.principal import Principal
from gateway.repositories.identity import projects, users
from gateway.repositories.money import audit
from gateway.services.money.balances import AllocationView, available_now, views
from rules.text import PROJECT_NAME

MAX_DESCRIPTION = 2000
MEMBER_ROLE = "member"


@dataclass(frozen=True)
class Member:
    """A member as shown: `user` is the username (the id of a user without one), `role`
    "pi" or "member"."""

    user: str
    role: str


@dataclass(frozen=True)
class ProjectSummary:
    """A project as listed: the caller's standing, its members, what it may spend now."""

    seen: Access
    members: int
    available_milli: int


@dataclass(frozen=True)
class ProjectDetail:
    """One project with its members and allocations."""

    seen: Access
    members: list[Member]
    allocations: list[AllocationView]


def create(session: Session, principal: Principal, name: str, description: str | None,
           now: datetime) -> Project:
    """A new project (administrators only); Conflict when the name is taken."""
    require_admin(principal)
    problem = PROJECT_NAME.problem(name)
    if problem is not None:
        raise Invalid(f"{problem}.", field="name")
    if description is not None and len(description) > MAX_DESCRIPTION:
        raise Invalid(f"A project's description has at most {MAX_DESCRIPTION} characters.",
                      field="description")
    if projects.name_taken(session, name):
        raise Conflict(f"A project named '{name}' already exists.")
    project = Project(name=name, description=description, created_at=now)
    projects.add(session, project)
    session.flush()
    audit.append(session, "project.create", f"project:{project.id}", principal.display,
                 {"name": name, "description": description}, now)
    return project


def summaries(session: Session, principal: Principal, now: datetime) -> list[ProjectSummary]:
    """Every project the caller may read, by name."""
    seen = visible_projects(session, principal)
    ids = [s.project.id for s in seen]
    counts = projects.member_counts(session, ids)
    by_project: dict[int, list[AllocationView]] = {}
    for view in views(session, ids, now):
        by_project.setdefault(view.allocation.project_id, []).append(view)
    return [ProjectSummary(s, counts.get(s.project.id, 0),
                           available_now(by_project.get(s.project.id, []))) for s in seen]


def detail(session: Session, principal: Principal, name: str, now: datetime) -> ProjectDetail:
    """The project, its members and allocations; NotFound unless the caller may read it."""
    seen = access(session, principal, name)
    return ProjectDetail(seen, _members(session, seen.project),
                         views(session, [seen.project.id], now))


def _members(session: Session, project: Project) -> list[Member]:
    return [Member(username or user_id, "pi" if role == PI_ROLE else MEMBER_ROLE)
            for user_id, username, role in projects.members(session, project.id)]


def _managed(session: Session, principal: Principal, name: str) -> Access:
    # A stranger learns nothing (NotFound, as for a missing project); someone who may
    # read the project learns why they may not change it.
    seen = access(session, principal, name)
    if not seen.may_manage_members:
        raise Forbidden(f"Only a PI of project '{name}' or an administrator may change its "
                        "members.")
    return seen


def _user_id(session: Session, user: str) -> str:
    found = users.id_by_username(session, user)
    if found is None and users.get(session, user) is not None:
        found = user  # a user without a username (a service client), named by id
    if found is None:
        raise Invalid(f"No user named '{user}': give a gateway username (or a user id).",
                      field="user")
    return found


def _keep_a_pi(session: Session, seen: Access, membership: Membership, user: str) -> None:
    """Refuse to take the PI role away from a personal project's owner, or (unless an
    administrator does it) from a project's last PI: nobody but admins could manage it."""
    if membership.role != PI_ROLE:
        return
    project = seen.project
    if project.personal_owner_id == membership.user_id:
        raise Conflict(f"'{user}' owns the personal project '{project.name}' and stays its PI.")
    if seen.standing is not Standing.ADMIN and projects.count_with_role(
            session, project.id, PI_ROLE) == 1:
        raise Conflict(f"'{user}' is the last PI of project '{project.name}'; name another "
                       "PI first.")


def set_member(session: Session, principal: Principal, name: str, user: str, pi: bool
               ) -> tuple[Member, bool]:
    """Make `user` a member (or, `pi`, a PI) of the project; returns the membership and
    whether it is new. Re-adding changes the role to the one asked for."""
    seen = _managed(session, principal, name)
    user_id = _user_id(session, user)
    role = PI_ROLE if pi else MEMBER_ROLE
    membership = projects.membership(session, seen.project.id, user_id)
    created = membership is None
    if membership is None:
        projects.add_member(session, seen.project.id, user_id, role)
        _audit(session, principal, seen, "project.member.add", user_id, None, role)
    elif membership.role != role:
        _keep_a_pi(session, seen, membership, user)
        _audit(session, principal, seen, "project.member.role", user_id, membership.role, role)
        membership.role = role
    session.flush()
    return Member(user, "pi" if pi else MEMBER_ROLE), created


def remove_member(session: Session, principal: Principal, name: str, user: str) -> None:
    """Take `user` out of the project (their jobs stay charged to it)."""
    seen = _managed(session, principal, name)
    user_id = _user_id(session, user)
    membership = projects.membership(session, seen.project.id, user_id)
    if membership is None:
        raise Invalid(f"'{user}' is not a member of project '{name}'.", field="user")
    _keep_a_pi(session, seen, membership, user)
    _audit(session, principal, seen, "project.member.remove", user_id, membership.role, None)
    projects.remove_member(session, membership)
    session.flush()


def _audit(session: Session, principal: Principal, seen: Access, kind: str, user_id: str,
           was: str | None, now_role: str | None) -> None:
    audit.append(session, kind, f"project:{seen.project.id}", principal.display,
                 {"project": seen.project.name, "user": user_id, "from": was,
                  "to": now_role}, utcnow())
