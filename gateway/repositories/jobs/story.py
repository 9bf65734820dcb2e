"""What a job's story reads besides its row, attempts and events: its routing decisions,
liens, usage records and ledger legs, each oldest first."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.db.bank_models import LedgerEntry, Lien, UsageRow
from gateway.db.models import Placement, User


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
