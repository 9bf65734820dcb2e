"""ORM models of job mail (a job spec's `notify`, gateway.domain.notify): what each job
asked for and where it goes, each mail sent (or being sent), and how far the mail step
has read the `events` outbox (gateway.services.mail.outbox says how they keep a mail from
being lost or sent twice)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base


class MailRequest(Base):
    """A job's `notify`, its address resolved when the job was accepted."""

    __tablename__ = "mail_requests"

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    address: Mapped[str] = mapped_column(String(254))
    # The kinds asked for, comma-separated (`all` expanded): "begin,end".
    kinds: Mapped[str] = mapped_column(String(32))


class MailSent(Base):
    """One mail of a job: claimed under a lease by the worker sending it (`sent_at` None),
    then sent (or refused for good by the relay: `outcome` says why)."""

    __tablename__ = "mail_sent"

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    kind: Mapped[str] = mapped_column(String(8), primary_key=True)
    # The event reporting what the mail tells.
    event_id: Mapped[int] = mapped_column(Integer)
    lease_owner: Mapped[str | None] = mapped_column(String(255), default=None)
    lease_until: Mapped[datetime | None] = mapped_column(default=None, index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    sent_at: Mapped[datetime | None] = mapped_column(default=None)
    outcome: Mapped[str | None] = mapped_column(Text, default=None)


class MailCursor(Base):
    """One row: the highest event id the mail step has read."""

    __tablename__ = "mail_cursor"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    last_event_id: Mapped[int] = mapped_column(Integer)
