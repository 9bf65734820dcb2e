"""Statuses: what the worker saw at a site, recorded. The scheduler's states of the
attempts it follows move the attempts and their jobs (a run that lost to a sibling is
revoked, gateway.services.lifecycle.hedging; a finished run with outputs goes to
stage-out first); and the site's own health, up or down."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from sqlalchemy.orm import Session

from adapters.base import JobStatus, NativeState
from adapters.reasons import because
from gateway.db.base import utcnow
from gateway.db.models import Attempt, Job
from gateway.domain.states import AttemptState, JobState, Reason
from gateway.metrics import Metrics
from gateway.repositories import sites as site_rows
from gateway.repositories.events import facts
from gateway.repositories.jobs import attempts
from gateway.repositories.jobs import rows as jobs
from gateway.repositories.jobs.attempts import Followed
from gateway.schemas.events import SITE_STATE_TYPE
from gateway.services.lifecycle import hedging
from gateway.services.lifecycle.transitions import (
    advance_counted,
    end_attempt,
    move_attempt,
    note,
)

log = logging.getLogger(__name__)

_FINAL_TARGET = {
    NativeState.COMPLETED: JobState.COMPLETED,
    NativeState.FAILED: JobState.FAILED,
    NativeState.CANCELLED: JobState.CANCELLED,
}


def followed(session: Session, site_name: str) -> list[Followed]:
    """The site's attempts the scheduler has, for one status call."""
    return attempts.followed(session, site_name)


def apply_statuses(session: Session, changed: Sequence[tuple[int, JobStatus]], *,
                   actor: str, metrics: Metrics) -> None:
    """Record what the scheduler said about these attempts (only changes are passed)."""
    locked = attempts.lock_many(session, [i for i, _ in changed])
    found = jobs.lock_many(session, {a.job_id for a in locked.values()})
    for attempt_id, status in changed:
        attempt = locked[attempt_id]
        _apply(session, found[attempt.job_id], attempt, status, actor, metrics)
    session.flush()


def _apply(session: Session, job: Job, attempt: Attempt, status: JobStatus, actor: str,
           metrics: Metrics) -> None:
    if attempt.state.is_final:
        return
    attempt.raw_state = status.raw_state
    if status.started_at and attempt.started_at is None:
        attempt.started_at = status.started_at
    lost = job.winner_attempt_id is not None and job.winner_attempt_id != attempt.id
    if lost:
        hedging.apply_lost(session, job, attempt, status, actor, metrics)
        return
    job.raw_state = status.raw_state
    if status.state is NativeState.UNKNOWN:
        log.warning("job %s: unknown scheduler state %r", job.id, status.raw_state)
        return
    if status.state is NativeState.QUEUED:
        attempt.reason = status.reason
        return
    if status.state is NativeState.RUNNING:
        move_attempt(session, attempt, AttemptState.RUNNING, actor=actor,
                     at=status.started_at)
        if job.winner_attempt_id is None:
            hedging.win(session, job, attempt, actor)
        advance_counted(session, job, JobState.RUNNING, actor=actor, metrics=metrics,
                        raw_state=status.raw_state, at=status.started_at,
                        reason=status.reason)
        return
    if status.state is not NativeState.COMPLETED and attempt.started_at is None \
            and job.winner_attempt_id is None \
            and hedging.siblings_remain(session, job, attempt):
        # Ended before it ever ran, and a sibling may still: not the job's end.
        end_attempt(session, attempt, AttemptState.of(_FINAL_TARGET[status.state]),
                    status.reason or status.raw_state or "ended", actor=actor)
        attempt.ended_at = status.ended_at or attempt.ended_at
        note(session, job, f"site '{attempt.site_name}' dropped it "
             f"({attempt.reason}); waiting for the other site(s)", actor=actor)
        return
    if job.winner_attempt_id is None:
        hedging.win(session, job, attempt, actor)  # it ran (too fast to be seen RUNNING)
    if job.started_at is None:
        # Never seen RUNNING (it ended between two status calls): the site knows when
        # it started, and `show` should say so.
        job.started_at = attempt.started_at
    target = _FINAL_TARGET[status.state]
    attempt.exit_code = status.exit_code
    attempt.reason = status.reason
    attempt.ended_at = status.ended_at or utcnow()
    move_attempt(session, attempt, AttemptState.of(target), actor=actor, at=attempt.ended_at)
    job.exit_code = status.exit_code
    reason = status.reason
    if target is JobState.CANCELLED and job.cancel_requested:
        reason = Reason.CANCELLED_BY_USER
    elif reason is None and status.exit_code:
        reason = because(Reason.EXIT_CODE, status.exit_code, " ")
    # One key read as stored, not through jobs.stored_spec: this unit of work applies
    # the statuses of all the site's jobs, which one spec a rule tightened since
    # must not block.
    container = job.spec.get("container") or {}
    if target is not JobState.CANCELLED and (
            job.spec.get("outputs") or job.spec.get("deliver")
            # Several steps: stage-out reads what each step exited with.
            or container.get("then") or container.get("ignore_error")):
        # Collect the outputs first (a failed run's too); stage-out finishes the job.
        attempt.lease_until = attempt.lease_owner = None
        advance_counted(session, job, JobState.STAGING_OUT, actor=actor, metrics=metrics,
                        raw_state=status.raw_state, at=attempt.ended_at,
                        reason=f"run ended {target.value}"
                        + (f" ({reason})" if reason else "") + "; collecting outputs")
        return
    advance_counted(session, job, target, actor=actor, metrics=metrics,
                    raw_state=status.raw_state, at=attempt.ended_at, reason=reason)


def record_site_state(session: Session, site_name: str, state: str,
                      reason: str | None) -> None:
    """Record a site's health (up, or down and why) as the worker saw it; a change is
    an event (admins and auditors read it)."""
    before = site_rows.set_state(session, site_name, state, reason)
    if before is not None and before != state:
        facts.add_all(session, [facts.NewFact(
            SITE_STATE_TYPE, utcnow(), "gateway", subject=f"site:{site_name}",
            data={"site": site_name, "from": before, "to": state, "reason": reason})])
