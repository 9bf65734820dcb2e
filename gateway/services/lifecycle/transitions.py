"""The one place a job changes state: monotonic, finals final, every change an event;
and the one place an attempt does, each change an event too (tests/services/
test_attempt_state_writes.py keeps it so)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.orm import Session

from gateway.db.base import utcnow
from gateway.db.models import Attempt, Job
from gateway.domain.states import AttemptState, JobState, Reason, can_transition
from gateway.metrics import Metrics
from gateway.repositories.events import facts
from gateway.repositories.jobs import attempts, events
from gateway.repositories.jobs.events import NewEvent
from gateway.schemas.events import ATTEMPT_STATE_TYPE


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


def advance_counted(session: Session, job: Job, target: JobState, *, actor: str,
                    metrics: Metrics, reason: str | None = None,
                    raw_state: str | None = None, at: datetime | None = None) -> bool:
    """`advance`, and count the change in the transitions metric when it happened."""
    if advance(session, job, target, actor=actor, reason=reason, raw_state=raw_state,
               at=at):
        metrics.transitions.labels(target.value).inc()
        return True
    return False


def new_attempt(session: Session, attempt: Attempt, *, actor: str) -> None:
    """Add the new attempt, SUBMITTING, with its first event (`from` null)."""
    attempt.state = AttemptState.SUBMITTING
    attempts.add(session, attempt)
    _attempt_event(session, attempt, None, actor, attempt.created_at)


def move_attempt(session: Session, attempt: Attempt, state: AttemptState, *, actor: str,
                 at: datetime | None = None) -> None:
    """Set the attempt's state and record the change in the same unit of work (nothing
    when it is already in `state`). The event says the attempt's reason and exit code
    as they are on the row: set them first. The caller holds the row lock."""
    before = attempt.state
    if before is state:
        return
    attempt.state = state
    _attempt_event(session, attempt, before, actor, at)


def end_attempt(session: Session, attempt: Attempt, state: AttemptState, reason: str, *,
                actor: str) -> None:
    """End the attempt (the caller holds its row lock): its final state, why, and its
    lease released."""
    attempt.reason = reason
    attempt.lease_until = None
    attempt.ended_at = utcnow()
    move_attempt(session, attempt, state, actor=actor, at=attempt.ended_at)


def _attempt_event(session: Session, attempt: Attempt, before: AttemptState | None,
                   actor: str, at: datetime | None) -> None:
    # About the job (its id the subject; its owner reads it); the columns of a job's
    # state change stay empty, so the job's history and its mail never read it.
    facts.add(session, facts.NewFact(ATTEMPT_STATE_TYPE, at or utcnow(), actor, {
        "attempt": attempt.number, "site": attempt.site_name,
        "native_id": attempt.native_id, "from": None if before is None else before.value,
        "to": attempt.state.value, "reason": attempt.reason,
        "exit_code": attempt.exit_code, "actor": actor}, job_id=attempt.job_id))


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
