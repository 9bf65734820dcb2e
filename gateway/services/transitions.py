"""The one place a job changes state: monotonic, finals final, every change an event."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from gateway.db.base import utcnow
from gateway.db.models import Job
from gateway.domain.states import JobState, Reason, can_transition
from gateway.repositories.jobs import events
from gateway.repositories.jobs.events import NewEvent


def advance(
    session: Session,
    job: Job,
    target: JobState,
    *,
    actor: str,
    reason: str | None = None,
    raw_state: str | None = None,
    at: datetime | None = None,
) -> bool:
    """Move `job` to `target` and record the event; False (and nothing written) if that
    would move it backwards or out of a final state. The caller holds the row lock."""
    current = JobState(job.state)
    if not can_transition(current, target):
        return False
    now = at or utcnow()
    job.state = target.value
    job.reason = reason
    if raw_state is not None:
        job.raw_state = raw_state
    job.updated_at = now
    if target is JobState.RUNNING and job.started_at is None:
        job.started_at = now
    if target.is_final:
        job.ended_at = now
    events.add(session, NewEvent(job.id, now, current.value, target.value, reason, actor,
                                 raw_state))
    return True


def note(session: Session, job: Job, reason: str, *, actor: str,
         at: datetime | None = None) -> None:
    """Record an event that changes no state (a hedge sibling's news, a routing decision):
    from and to are the job's current state."""
    events.add(session, NewEvent(job.id, at or utcnow(), job.state, job.state, reason,
                                 actor))


def request_cancel(session: Session, job: Job, actor: str) -> None:
    """Cancel the locked, unfinished job: at once while no worker has taken it (no hold
    or gate waits for anything then), else by asking the worker to (cancel_requested)."""
    if JobState(job.state) is JobState.ACCEPTED:
        job.held, job.gate = False, None
        advance(session, job, JobState.CANCELLED, actor=actor, reason=Reason.CANCELLED_BY_USER)
    else:
        job.cancel_requested = True
        job.updated_at = utcnow()
