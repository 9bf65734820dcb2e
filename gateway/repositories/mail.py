"""Job mail's rows (gateway.db.mail_models): what each job asked, the mails claimed and
sent, the cursor over the `events` outbox; and what a mail tells of its job."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, func, insert, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from gateway.db.mail_models import MailCursor, MailRequest, MailSent
from gateway.db.models import Event, Job, User

_CURSOR_ID = 1


@dataclass(frozen=True)
class Candidate:
    """A state change of a job that asked for mail."""

    event_id: int
    job_id: str
    to_state: str
    kinds: str
    cancel_requested: bool
    started: bool


@dataclass(frozen=True)
class Facts:
    """What one mail tells: the job now, and the change it reports."""

    job_id: str
    name: str
    address: str
    state: str
    site: str | None
    exit_code: int | None
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    event_state: str
    event_reason: str | None
    event_at: datetime


def user_email(conn: Connection, user_id: str) -> str | None:
    """The verified address the user's identity provider gave, if any."""
    return conn.execute(select(User.email).where(User.id == user_id)).scalar()


def add_requests(session: Session, job_ids: Sequence[str], address: str, kinds: str) -> None:
    """Record that these jobs asked for mail of `kinds` to `address`."""
    session.connection().execute(insert(MailRequest), [
        {"job_id": job_id, "address": address, "kinds": kinds} for job_id in job_ids])


def cursor(conn: Connection) -> int:
    """The highest event id the mail step has read (0 before the first pass)."""
    return int(conn.execute(select(MailCursor.last_event_id)
                            .where(MailCursor.id == _CURSOR_ID)).scalar() or 0)


def advance_cursor(conn: Connection, to: int) -> None:
    """Move the cursor up to `to` (never down: workers' passes may end in any order)."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    conn.execute(dialect.insert(MailCursor).values(id=_CURSOR_ID, last_event_id=0)
                 .on_conflict_do_nothing())
    conn.execute(update(MailCursor).where(MailCursor.id == _CURSOR_ID,
                                          MailCursor.last_event_id < to)
                 .values(last_event_id=to))


def last_event_id(conn: Connection) -> int:
    """The highest event id committed so far."""
    return int(conn.execute(select(func.coalesce(func.max(Event.id), 0))).scalar_one())


def candidates(conn: Connection, above: int, up_to: int, states: Sequence[str],
               limit: int) -> list[Candidate]:
    """Changes to `states` in (above, up_to] of jobs that asked for mail, by id."""
    query = (select(Event.id, Event.job_id, Event.to_state, MailRequest.kinds,
                    Job.cancel_requested, Job.started_at)
             .join(MailRequest, MailRequest.job_id == Event.job_id)
             .join(Job, Job.id == Event.job_id)
             .where(Event.id > above, Event.id <= up_to, Event.to_state.in_(states),
                    # A note (a routing decision) changes no state.
                    or_(Event.from_state.is_(None), Event.from_state != Event.to_state))
             .order_by(Event.id).limit(limit))
    return [Candidate(int(r.id), r.job_id, r.to_state, r.kinds, bool(r.cancel_requested),
                      r.started_at is not None) for r in conn.execute(query)]


def due(conn: Connection, now: datetime, limit: int) -> list[tuple[str, str, int]]:
    """(job, kind, event id) of mails claimed but not sent whose lease (or retry wait)
    has run out: their worker died, or the relay refused them for now."""
    query = (select(MailSent.job_id, MailSent.kind, MailSent.event_id)
             .where(MailSent.sent_at.is_(None), MailSent.lease_until < now)
             .order_by(MailSent.event_id).limit(limit))
    return [(r.job_id, r.kind, int(r.event_id)) for r in conn.execute(query)]


def known(conn: Connection, job_ids: Sequence[str]) -> set[tuple[str, str]]:
    """The (job, kind) of these jobs' mails already claimed or sent."""
    if not job_ids:
        return set()
    query = select(MailSent.job_id, MailSent.kind).where(MailSent.job_id.in_(job_ids))
    return {(r.job_id, r.kind) for r in conn.execute(query)}


def claim(conn: Connection, job_id: str, kind: str, event_id: int, owner: str,
          now: datetime, until: datetime) -> bool:
    """Take the mail (job, kind) under a lease until `until`: new, or claimed before and
    neither sent nor leased now. False when another worker holds or sent it."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    # A concurrent claimer of a new mail waits for this row's commit, then inserts nothing.
    made = conn.execute(dialect.insert(MailSent).values(
        job_id=job_id, kind=kind, event_id=event_id, lease_owner=owner, lease_until=until,
        attempts=1).on_conflict_do_nothing().returning(MailSent.job_id)).first()
    if made is not None:
        return True
    taken = conn.execute(update(MailSent).where(
        MailSent.job_id == job_id, MailSent.kind == kind, MailSent.sent_at.is_(None),
        MailSent.lease_until < now).values(
        lease_owner=owner, lease_until=until, attempts=MailSent.attempts + 1))
    return taken.rowcount == 1


def finish(conn: Connection, job_id: str, kind: str, owner: str, now: datetime,
           outcome: str | None = None) -> bool:
    """Record the mail sent (or, with `outcome`, given up); False if the lease was lost."""
    done = conn.execute(update(MailSent).where(
        MailSent.job_id == job_id, MailSent.kind == kind, MailSent.lease_owner == owner,
        MailSent.sent_at.is_(None)).values(
        sent_at=now, lease_owner=None, lease_until=None, outcome=outcome))
    return done.rowcount == 1


def retry_at(conn: Connection, job_id: str, kind: str, owner: str, at: datetime,
             outcome: str) -> None:
    """Let the mail go for now, to be tried again from `at`, saying why."""
    conn.execute(update(MailSent).where(
        MailSent.job_id == job_id, MailSent.kind == kind, MailSent.lease_owner == owner,
        MailSent.sent_at.is_(None)).values(lease_owner=None, lease_until=at, outcome=outcome))


def attempts(conn: Connection, job_id: str, kind: str) -> int:
    """How many times the mail was claimed."""
    return int(conn.execute(select(MailSent.attempts).where(
        MailSent.job_id == job_id, MailSent.kind == kind)).scalar() or 0)


def facts(conn: Connection, job_id: str, event_id: int) -> Facts | None:
    """What the mail about event `event_id` of the job tells (None: no such event)."""
    row = conn.execute(
        select(Job.id, Job.name, Job.state, Job.site_name, Job.exit_code, Job.created_at,
               Job.started_at, Job.ended_at, MailRequest.address,
               Event.to_state, Event.reason, Event.at)
        .join(MailRequest, MailRequest.job_id == Job.id)
        .join(Event, Event.job_id == Job.id)
        .where(Job.id == job_id, Event.id == event_id)).first()
    if row is None:
        return None
    return Facts(row.id, row.name, row.address, row.state, row.site_name, row.exit_code,
                 row.created_at, row.started_at, row.ended_at, row.to_state, row.reason,
                 row.at)
