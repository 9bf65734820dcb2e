"""Which attempt of a job is its run, when a job has several (hedged submission, or a
failover sibling at another site): the first to start wins.

The winner is recorded once, as `Job.winner_attempt_id`, under the job's row lock, so two
workers polling two sites agree on it. Every other attempt is then a loser: the cancel
step cancels it at its site (`repositories.jobs.attempts.pending_cancels`), a sibling still
staging is ended before it is submitted (`cancels.cancel_before_submit`), and its end,
whatever it was, is recorded REVOKED: never the job's result, never staged out, never
charged. Losers are never written while the winner is chosen (only the job row is), so
the lock order of gateway.services.lifecycle (attempts before jobs) holds.
"""

from __future__ import annotations

import logging

from sqlalchemy.orm import Session

from adapters.base import JobStatus, NativeState
from gateway.db.base import utcnow
from gateway.db.models import Attempt, Job
from gateway.domain.states import AttemptState
from gateway.metrics import Metrics
from gateway.repositories.jobs import attempts, targets
from gateway.services.lifecycle.transitions import move_attempt, note

log = logging.getLogger(__name__)


def siblings_remain(session: Session, job: Job, attempt: Attempt) -> bool:
    """Whether another attempt of the job may still start, so that this attempt's end
    (before it ran) is not the job's; never once the user cancelled."""
    return not job.cancel_requested and job.winner_attempt_id is None and (
        attempts.live_siblings(session, job.id, attempt.id) > 0
        or targets.open_count(session, job.id) > 0)


def win(session: Session, job: Job, attempt: Attempt, actor: str) -> None:
    """The attempt started first: it is the job's run, at its site. Said in an event
    only when that moves the job (a sibling at another site won): this runs at every
    job's start, so the usual case costs no query."""
    job.winner_attempt_id = attempt.id
    if job.site_name != attempt.site_name:
        job.site_name = attempt.site_name
        note(session, job, f"started first at site '{attempt.site_name}'; any other "
             "attempt is revoked", actor=actor)


def apply_lost(session: Session, job: Job, attempt: Attempt, status: JobStatus,
               actor: str, metrics: Metrics) -> None:
    """What a site said about an attempt that lost: a late start is a double start
    (counted; the cancel step cancels it), and any end is REVOKED."""
    if status.state is NativeState.RUNNING and attempt.state is not AttemptState.RUNNING:
        move_attempt(session, attempt, AttemptState.RUNNING, actor=actor,
                     at=status.started_at)
        metrics.double_starts.inc()
        log.warning("job %s: attempt %d at %s started after the winner; revoking",
                    job.id, attempt.id, attempt.site_name)
        note(session, job, f"also started at site '{attempt.site_name}' before its "
             "revocation reached it; cancelling it there", actor=actor)
    if status.state.is_final:
        attempt.reason = (f"revoked: the job started first at site '{job.site_name}'"
                          + (f" (here: {status.raw_state})" if status.raw_state else ""))
        attempt.exit_code = status.exit_code
        attempt.lease_until = None
        attempt.ended_at = status.ended_at or utcnow()
        move_attempt(session, attempt, AttemptState.REVOKED, actor=actor,
                     at=attempt.ended_at)
