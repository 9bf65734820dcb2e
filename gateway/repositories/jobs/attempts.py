"""Attempts: one submission of a job to one site, its lease, its cancel and its status."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, select, update
from sqlalchemy.orm import Session

from gateway.db.models import Attempt, Job, User
from gateway.domain.states import LIVE_ATTEMPT_STATES, AttemptState, JobState


@dataclass(frozen=True)
class LeasedAttempt:
    """An attempt whose lease this worker just took, with what working on it needs."""

    attempt: Attempt
    spec: dict[str, Any]
    owner: str | None
    owner_id: str
    array_index: int | None = None  # a task of a job array: its index


@dataclass(frozen=True)
class PendingCancel:
    attempt_id: int
    native_id: str
    owner: str | None


@dataclass(frozen=True)
class Followed:
    """An attempt at the scheduler (QUEUED or RUNNING) as last recorded."""

    id: int
    native_id: str
    state: AttemptState
    raw_state: str | None
    owner: str | None
    cancel_sent: bool


def count_live(session: Session, site_name: str) -> int:
    """Attempts holding one of the site's job slots."""
    return session.scalar(select(func.count()).select_from(Attempt).where(
        Attempt.site_name == site_name, Attempt.state.in_(LIVE_ATTEMPT_STATES))) or 0


def last_numbers(session: Session, job_ids: Collection[str]) -> dict[str, int]:
    """Each job's highest attempt number (jobs without attempts are left out)."""
    return {job_id: number for job_id, number in session.execute(
        select(Attempt.job_id, func.max(Attempt.number))
        .where(Attempt.job_id.in_(job_ids)).group_by(Attempt.job_id))}


def failed_sites(session: Session, job_ids: Collection[str]) -> dict[str, frozenset[str]]:
    """For each of these jobs that has failed attempts: the sites they failed at."""
    found: dict[str, set[str]] = {}
    if job_ids:
        for job_id, site in session.execute(
                select(Attempt.job_id, Attempt.site_name).distinct()
                .where(Attempt.job_id.in_(job_ids), Attempt.state == AttemptState.FAILED)):
            found.setdefault(job_id, set()).add(site)
    return {job_id: frozenset(sites) for job_id, sites in found.items()}


@dataclass(frozen=True)
class StartedAttempt:
    """An attempt that started at a site: what its queue wait and run time teach."""

    site_name: str
    state: AttemptState
    submitted_at: datetime
    started_at: datetime
    ended_at: datetime | None
    owner_id: str
    spec: dict[str, Any]
    job_id: str


@dataclass(frozen=True)
class LiveAttempt:
    """An attempt holding or waiting for a site's cores: its spec and when it started."""

    spec: dict[str, Any]
    started_at: datetime | None


def usernames_at(session: Session, site_name: str) -> list[str]:
    """The usernames of everyone who ever had an attempt at the site."""
    return sorted(name for name in session.scalars(
        select(User.username).distinct()
        .join(Job, Job.owner_id == User.id).join(Attempt, Attempt.job_id == Job.id)
        .where(Attempt.site_name == site_name, User.username.is_not(None))) if name)


def live_at(session: Session, site_name: str) -> list[LiveAttempt]:
    """The site's live attempts (submitting, queued or running), oldest first."""
    return [LiveAttempt(spec, started) for spec, started in session.execute(
        select(Job.spec, Attempt.started_at).join(Job, Job.id == Attempt.job_id)
        .where(Attempt.site_name == site_name, Attempt.state.in_(LIVE_ATTEMPT_STATES))
        .order_by(Attempt.id))]


@dataclass(frozen=True)
class EndedAttempt:
    """An attempt that ended (completed or failed), with its job's owner, spec and end:
    what a black-hole ban is derived from."""

    ended_at: datetime
    state: AttemptState
    reason: str | None
    exit_code: int | None
    owner_id: str
    spec: dict[str, Any]
    job_state: str
    job_reason: str | None


_ENDINGS = (AttemptState.COMPLETED, AttemptState.FAILED)


def recent_ends(session: Session, site_name: str, limit: int) -> list[EndedAttempt]:
    """The site's `limit` most recent attempts that completed or failed (whether they
    started or not), newest first."""
    rows = session.execute(
        select(Attempt.ended_at, Attempt.state, Attempt.reason, Attempt.exit_code,
               Job.owner_id, Job.spec, Job.state, Job.reason)
        .join(Job, Job.id == Attempt.job_id)
        .where(Attempt.site_name == site_name, Attempt.state.in_(_ENDINGS),
               Attempt.ended_at.is_not(None))
        .order_by(Attempt.ended_at.desc()).limit(limit))
    return [EndedAttempt(*row) for row in rows]


def recent_starts(session: Session, limit: int) -> list[StartedAttempt]:
    """The `limit` attempts that started most recently (any site), oldest first."""
    rows = session.execute(
        select(Attempt.site_name, Attempt.state, Attempt.submitted_at, Attempt.started_at,
               Attempt.ended_at, Job.owner_id, Job.spec, Attempt.job_id)
        .join(Job, Job.id == Attempt.job_id)
        .where(Attempt.started_at.is_not(None), Attempt.submitted_at.is_not(None))
        .order_by(Attempt.started_at.desc(), Attempt.id.desc()).limit(limit)).all()
    return [StartedAttempt(*row) for row in reversed(rows)]


def home_sites(session: Session, owner_ids: Collection[str]) -> dict[str, str]:
    """Owner -> the site where their most recently started attempt ran (routing's home
    for their next `site: auto` job); owners who never ran a job are left out."""
    if not owner_ids:
        return {}
    latest = (select(Job.owner_id, func.max(Attempt.started_at).label("started_at"))
              .join(Job, Job.id == Attempt.job_id)
              .where(Job.owner_id.in_(owner_ids), Attempt.started_at.is_not(None))
              .group_by(Job.owner_id).subquery())
    rows = session.execute(
        select(latest.c.owner_id, Attempt.site_name)
        .join(Job, Job.owner_id == latest.c.owner_id)
        .join(Attempt, and_(Attempt.job_id == Job.id,
                            Attempt.started_at == latest.c.started_at))
        .order_by(Attempt.id))
    return {owner: site for owner, site in rows}


def add(session: Session, attempt: Attempt) -> None:
    """Add a new attempt to the unit of work."""
    session.add(attempt)


def lease_stale(session: Session, site_name: str, states: Collection[AttemptState],
                job_state: JobState | None, now: datetime, owner: str, until: datetime,
                limit: int, where: ColumnElement[bool] | None = None) -> list[LeasedAttempt]:
    """Take the lease on up to `limit` attempts of the site in `states` (and, if given,
    whose job is in `job_state`, and which meet `where`) that nobody holds, or whose
    holder let it run out; rows other workers are taking right now are skipped."""
    query = (select(Attempt, Job.spec, User.username, User.id, Job.array_index)
             .join(Job, Job.id == Attempt.job_id)
             .join(User, User.id == Job.owner_id)
             .where(Attempt.site_name == site_name, Attempt.state.in_(states),
                    or_(Attempt.lease_until.is_(None), Attempt.lease_until < now)))
    if where is not None:
        query = query.where(where)
    if job_state is not None:
        # Only the job's own run: never an attempt that lost a hedge to it.
        query = query.where(Job.state == job_state.value,
                            or_(Job.winner_attempt_id.is_(None),
                                Job.winner_attempt_id == Attempt.id))
    rows = session.execute(query.order_by(Attempt.id).limit(limit)
                           .with_for_update(of=Attempt, skip_locked=True)).all()
    return lease_rows(session, rows, owner, until)


def lease_rows(session: Session, rows: Sequence[Any],
               owner: str, until: datetime) -> list[LeasedAttempt]:
    """Lease the locked (attempt, spec, username, user id, array index) rows to `owner`."""
    leased = []
    for attempt, spec, username, user_id, array_index in rows:
        attempt.lease_until, attempt.lease_owner = until, owner
        leased.append(LeasedAttempt(attempt, spec, username, user_id, array_index))
    session.flush()
    return leased


def renew_lease(session: Session, attempt_id: int, owner: str, until: datetime) -> bool:
    """Extend `owner`'s lease on the attempt; False when it no longer holds it."""
    result = session.execute(
        update(Attempt)
        .where(Attempt.id == attempt_id, Attempt.lease_owner == owner,
               Attempt.lease_until.is_not(None))
        .values(lease_until=until)
        .execution_options(synchronize_session=False))
    return bool(getattr(result, "rowcount", 0) == 1)


def lock(session: Session, attempt_id: int) -> Attempt | None:
    """The attempt, its row locked until the unit of work ends."""
    return session.get(Attempt, attempt_id, with_for_update=True)


def lock_many(session: Session, attempt_ids: Collection[int]) -> dict[int, Attempt]:
    """The attempts, locked in id order (attempts before jobs, everywhere: no deadlocks)."""
    return {a.id: a for a in session.scalars(
        select(Attempt).where(Attempt.id.in_(attempt_ids))
        .order_by(Attempt.id).with_for_update())}


def live_siblings(session: Session, job_id: str, attempt_id: int) -> int:
    """The job's other attempts still live (hedge or failover siblings)."""
    return session.scalar(select(func.count()).select_from(Attempt).where(
        Attempt.job_id == job_id, Attempt.id != attempt_id,
        Attempt.state.in_(LIVE_ATTEMPT_STATES))) or 0


def pending_cancels(session: Session, site_name: str) -> list[PendingCancel]:
    """Live attempts at the site to cancel and not cancelled yet: their job's owner asked,
    or another attempt of the job started first (a hedge or failover it lost)."""
    rows = session.execute(
        select(Attempt.id, Attempt.native_id, User.username)
        .join(Job, Job.id == Attempt.job_id)
        .join(User, User.id == Job.owner_id)
        .where(Attempt.site_name == site_name,
               or_(Job.cancel_requested.is_(True),
                   and_(Job.winner_attempt_id.is_not(None),
                        Job.winner_attempt_id != Attempt.id)),
               Attempt.native_id.is_not(None), Attempt.cancel_sent_at.is_(None),
               Attempt.state.in_(LIVE_ATTEMPT_STATES))
        .order_by(Attempt.id)  # oldest first, the same on every database
    ).all()
    return [PendingCancel(i, native_id, owner) for i, native_id, owner in rows
            if native_id is not None]


def mark_cancel_sent(session: Session, attempt_id: int, at: datetime) -> None:
    session.execute(update(Attempt).where(Attempt.id == attempt_id)
                    .values(cancel_sent_at=at))


def followed(session: Session, site_name: str) -> list[Followed]:
    """The site's attempts the scheduler has (QUEUED or RUNNING), for one status call."""
    rows = session.execute(
        select(Attempt.id, Attempt.native_id, Attempt.state, Attempt.raw_state,
               Attempt.cancel_sent_at, User.username)
        .join(Job, Job.id == Attempt.job_id)
        .join(User, User.id == Job.owner_id)
        .where(Attempt.site_name == site_name, Attempt.native_id.is_not(None),
               Attempt.state.in_((AttemptState.QUEUED, AttemptState.RUNNING)))
        .order_by(Attempt.id)  # one status command, its ids in the same order every time
    ).all()
    return [Followed(r.id, r.native_id, r.state, r.raw_state, r.username,
                     r.cancel_sent_at is not None)
            for r in rows if r.native_id is not None]
