"""Job targets: further sites a job is to be submitted to (hedges and failovers)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from gateway.db.models import Attempt, Job, JobTarget, User
from gateway.domain.states import AttemptState, JobState
from gateway.repositories.jobs.rows import OwnedJob

# A target is claimable while its job has not started anywhere yet.
_CLAIMABLE_JOB_STATES = (JobState.ACCEPTED.value, JobState.STAGING_IN.value,
                         JobState.QUEUED.value)


def add(session: Session, job_id: str, sites: Sequence[str], reason: str,
        now: datetime) -> None:
    """Add the job's targets at `sites` (sites it already targets are left as they are)."""
    have = set(session.scalars(select(JobTarget.site_name).where(JobTarget.job_id == job_id)))
    session.add_all(JobTarget(job_id=job_id, site_name=site, reason=reason, created_at=now)
                    for site in sites if site not in have)


def lock_open(session: Session, site_name: str, limit: int) -> list[OwnedJob]:
    """Up to `limit` hedged or failed-over jobs that still need an attempt at the site and
    may still use one (not started anywhere, not cancelled), oldest first; job (and
    target) rows locked, rows other workers hold skipped. Two kinds: an unclaimed target
    at the site, and the site that is the job's own when a sibling was claimed first
    (the job has left ACCEPTED, so the usual claim passes it by)."""
    claimable = (Job.state.in_(_CLAIMABLE_JOB_STATES), Job.winner_attempt_id.is_(None),
                 Job.cancel_requested.is_(False), Job.held.is_(False), Job.gate.is_(None))
    rows = session.execute(
        select(Job, User.username, User.id)
        .join(JobTarget, JobTarget.job_id == Job.id)
        .join(User, User.id == Job.owner_id)
        .where(JobTarget.site_name == site_name, JobTarget.claimed_at.is_(None), *claimable)
        .order_by(JobTarget.created_at, Job.id).limit(limit)
        .with_for_update(of=(JobTarget, Job), skip_locked=True)).all()
    found = [OwnedJob(job, owner, owner_id) for job, owner, owner_id in rows]
    if len(found) < limit:
        hedged = select(JobTarget.job_id).where(JobTarget.job_id == Job.id).exists()
        tried_here = (select(Attempt.id)
                      .where(Attempt.job_id == Job.id, Attempt.site_name == site_name)
                      .exists())
        rows = session.execute(
            select(Job, User.username, User.id)
            .join(User, User.id == Job.owner_id)
            .where(Job.site_name == site_name, Job.state != JobState.ACCEPTED.value,
                   *claimable, hedged, ~tried_here)
            .order_by(Job.created_at, Job.id).limit(limit - len(found))
            .with_for_update(of=Job, skip_locked=True)).all()
        found += [OwnedJob(job, owner, owner_id) for job, owner, owner_id in rows]
    return found


def mark_claimed(session: Session, job_id: str, site_name: str, now: datetime) -> None:
    session.execute(update(JobTarget)
                    .where(JobTarget.job_id == job_id, JobTarget.site_name == site_name)
                    .values(claimed_at=now))


def open_count(session: Session, job_id: str) -> int:
    """The job's targets no worker has claimed yet."""
    return session.scalar(select(func.count()).select_from(JobTarget).where(
        JobTarget.job_id == job_id, JobTarget.claimed_at.is_(None))) or 0


def sites_of(session: Session, job_id: str) -> list[str]:
    """Every site the job targets besides its own."""
    return list(session.scalars(select(JobTarget.site_name)
                                .where(JobTarget.job_id == job_id)
                                .order_by(JobTarget.created_at, JobTarget.site_name)))


def lock_stranded(session: Session, site_names: Sequence[str], limit: int, site_choice: str
                  ) -> list[tuple[OwnedJob, str]]:
    """Jobs whose spec chose `site_choice` (`auto`) waiting to start at one of these
    sites (an attempt there live and not started, no other attempt started, no target
    open elsewhere, no cancel), with the site; job rows locked, others' rows skipped."""
    if not site_names:
        return []
    open_target = (select(JobTarget.job_id)
                   .where(JobTarget.job_id == Job.id, JobTarget.claimed_at.is_(None))
                   .exists())
    rows = session.execute(
        select(Job, User.username, User.id, Attempt.site_name)
        .join(Attempt, Attempt.job_id == Job.id)
        .join(User, User.id == Job.owner_id)
        .where(Attempt.site_name.in_(site_names),
               Attempt.state.in_((AttemptState.SUBMITTING, AttemptState.QUEUED)),
               Attempt.started_at.is_(None), Job.winner_attempt_id.is_(None),
               Job.cancel_requested.is_(False), ~open_target,
               Job.spec["site"].as_string() == site_choice)
        .order_by(Job.created_at, Job.id).limit(limit)
        .with_for_update(of=Job, skip_locked=True)).all()
    return [(OwnedJob(job, owner, owner_id), site) for job, owner, owner_id, site in rows]


def tried_sites(session: Session, job_id: str) -> set[str]:
    """Every site the job has had an attempt or a target at."""
    return set(session.scalars(select(Attempt.site_name).where(Attempt.job_id == job_id))) \
        | set(sites_of(session, job_id))
