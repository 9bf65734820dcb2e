"""Cancels: what the cancel step reads and records, and ending a claim that a cancel (or
a sibling that started first) overtook while it was staging in.

A cancel's one record is `Job.cancel_requested` (gateway.worker.cancel says why that is
enough); a losing sibling's is the job's winner (gateway.services.lifecycle.hedging).
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from gateway.db.base import utcnow
from gateway.domain.states import AttemptState, JobState, Reason
from gateway.repositories.jobs import attempts
from gateway.repositories.jobs import rows as jobs
from gateway.repositories.jobs.attempts import PendingCancel
from gateway.services.lifecycle.claims import Claim
from gateway.services.lifecycle.holder import LeaseHolder
from gateway.services.lifecycle.transitions import advance, end_attempt


def stop_requested(session: Session, job_id: str, attempt_id: int) -> bool:
    """Whether the job's owner asked to cancel it (the one record of a cancel), or a
    sibling of this attempt started first."""
    return jobs.stop_requested(session, job_id, attempt_id)


def pending_cancels(session: Session, site_name: str) -> list[PendingCancel]:
    """Cancels to send to the site: asked for, not sent yet, the job at the site."""
    return attempts.pending_cancels(session, site_name)


def cancel_sent(session: Session, attempt_id: int) -> None:
    """The site was asked to cancel (or did not know the job): do not ask again."""
    attempts.mark_cancel_sent(session, attempt_id, utcnow())
    session.flush()


def cancel_before_submit(session: Session, holder: LeaseHolder, claim: Claim) -> bool:
    """End the claim if its cancel came while it was staging in (nothing reached the
    scheduler), CANCELLED, or REVOKED if a sibling started first, while the holder
    still holds it. True when it was ended."""
    attempt = attempts.lock(session, claim.attempt_id)
    job = jobs.lock(session, claim.job_id)
    assert attempt is not None and job is not None
    if attempt.state is not AttemptState.SUBMITTING \
            or attempt.lease_owner != holder.worker_id:
        return False
    if job.winner_attempt_id is not None and not job.cancel_requested:
        end_attempt(session, attempt, AttemptState.REVOKED, f"revoked before submission: "
                    f"the job started first at site '{job.site_name}'", actor=holder.actor)
        session.flush()
        return True
    if not job.cancel_requested:
        return False
    end_attempt(session, attempt, AttemptState.CANCELLED, Reason.CANCELLED_BY_USER,
                actor=holder.actor)
    advance(session, job, JobState.CANCELLED, actor=holder.actor,
            reason=f"{Reason.CANCELLED_BY_USER} while staging in; not submitted")
    session.flush()
    return True
