"""Who may read and change what of a project's money. One rule, used by every bank,
report and audit endpoint:

- `admin`: everything (creates projects, grants and adjusts allocations);
- `auditor`: reads everything, changes nothing;
- a project's PI (membership role `manager`, which a personal project's owner is): reads
  the whole project's usage and balances, adds and removes members;
- a member: reads the balances and only their own usage;
- anyone else: the project does not exist for them (404, names are not an oracle).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy.orm import Session

from gateway.db.models import Project
from gateway.domain.errors import Forbidden, NotFound
from gateway.domain.principal import Principal
from gateway.repositories.identity import projects
from gateway.repositories.identity.projects import PI_ROLE as PI_ROLE  # re-exported


class Standing(StrEnum):
    """How a caller stands towards one project."""

    ADMIN = "admin"
    AUDITOR = "auditor"
    PI = "pi"
    MEMBER = "member"


@dataclass(frozen=True)
class Access:
    """A caller's standing on one project, and whose usage they may read there."""

    project: Project
    standing: Standing

    @property
    def reads_everyones_usage(self) -> bool:
        return self.standing is not Standing.MEMBER

    @property
    def may_manage_members(self) -> bool:
        return self.standing in (Standing.ADMIN, Standing.PI)


def is_auditor(principal: Principal) -> bool:
    """Reads every project (admins too)."""
    return principal.has_role("auditor")


def access(session: Session, principal: Principal, project_name: str) -> Access:
    """The caller's standing on the project named `project_name`; NotFound when they have
    none (the same answer as for a project that does not exist)."""
    project = projects.by_name(session, project_name)
    if project is not None:
        if "admin" in principal.roles:
            return Access(project, Standing.ADMIN)
        if is_auditor(principal):
            return Access(project, Standing.AUDITOR)
        role = projects.role_of(session, project.id, principal.user_id)
        if role is not None:
            return Access(project, Standing.PI if role == PI_ROLE else Standing.MEMBER)
    raise NotFound(f"No project named '{project_name}' that you can see.")


def require_admin(principal: Principal) -> None:
    """Forbidden unless the caller is an administrator."""
    if "admin" not in principal.roles:
        raise Forbidden("Only a gateway administrator may do this.")


def visible_projects(session: Session, principal: Principal) -> list[Access]:
    """Every project the caller may read, by name."""
    if "admin" in principal.roles or is_auditor(principal):
        standing = Standing.ADMIN if "admin" in principal.roles else Standing.AUDITOR
        return [Access(p, standing) for p in projects.all_projects(session)]
    return [Access(p, Standing.PI if role == PI_ROLE else Standing.MEMBER)
            for p, role in projects.of_member(session, principal.user_id)]
