"""What a job's story reads besides its row, attempts and events: its routing decisions,
liens, usage records and ledger legs, each oldest first."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import Session

from gateway.db.bank_models import LedgerEntry, Lien, UsageRow
from gateway.db.models import Job, Membership, Placement, Project, User
from gateway.schemas.audit import StoryJobOut


def owner(session: Session, user_id: str) -> User:
    """The job's owner (a user row always exists for a job's owner_id)."""
    return session.get_one(User, user_id)


def placements(session: Session, job_id: str) -> list[Placement]:
    return list(session.scalars(select(Placement).where(Placement.job_id == job_id)
                                .order_by(Placement.id)))


def liens(session: Session, job_id: str) -> list[Lien]:
    return list(session.scalars(select(Lien).where(Lien.job_id == job_id).order_by(Lien.id)))


def usage(session: Session, job_id: str) -> list[UsageRow]:
    return list(session.scalars(select(UsageRow).where(UsageRow.job_id == job_id)
                                .order_by(UsageRow.id)))


def ledger(session: Session, job_id: str) -> list[LedgerEntry]:
    return list(session.scalars(select(LedgerEntry).where(LedgerEntry.job_id == job_id)
                                .order_by(LedgerEntry.id)))


def readable(session: Session, id_prefix: str, reader: str | None, pi_role: str,
             limit: int, after: tuple[datetime, str] | None = None) -> list[StoryJobOut]:
    """Up to `limit` jobs whose id starts with `id_prefix`, newest first from just after
    the (created_at, id) `after`, that `reader` owns or holds `pi_role` in the project of
    (None: every job, for auditors, admins)."""
    query = (select(Job.id, Job.name, Job.state, Project.name.label("project"),
                    func.coalesce(User.username, User.subject).label("owner"), Job.created_at)
             .join(Project, Project.id == Job.project_id)
             .join(User, User.id == Job.owner_id)
             # LIKE 'prefix%' with any wildcard escaped: user text is never a pattern.
             .where(Job.id.startswith(id_prefix, autoescape=True))
             .order_by(Job.created_at.desc(), Job.id.desc()).limit(limit))
    if after is not None:
        created, job_id = after
        query = query.where(or_(Job.created_at < created,
                                and_(Job.created_at == created, Job.id < job_id)))
    if reader is not None:
        led = select(Membership.project_id).where(Membership.user_id == reader,
                                                  Membership.role == pi_role)
        query = query.where(or_(Job.owner_id == reader, Job.project_id.in_(led)))
    return [StoryJobOut(id=r.id, name=r.name, state=r.state, project=r.project,
                        owner=r.owner, created_at=r.created_at) for r in session.execute(query)]
