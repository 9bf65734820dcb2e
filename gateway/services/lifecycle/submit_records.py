"""Submit records: what the site said to a submit, committed by the worker holding the
claim: the site's job ids (the jobs QUEUED), or its refusal (attempt and job FAILED,
unless a sibling at another site may still run the job)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from gateway.db.base import utcnow
from gateway.domain.states import AttemptState, JobState
from gateway.metrics import Metrics
from gateway.repositories.events import facts
from gateway.repositories.events.facts import NewFact
from gateway.repositories.jobs import attempts
from gateway.repositories.jobs import rows as jobs
from gateway.services.lifecycle import hedging
from gateway.services.lifecycle.claims import Claim
from gateway.services.lifecycle.transitions import (
    advance,
    advance_counted,
    end_attempt,
    move_attempt,
    note,
)


@dataclass(frozen=True)
class Submitted:
    """A claim the site took, with its job id and how its inputs were staged."""

    claim: Claim
    native_id: str
    staged: str | None = None  # a summary of the stage-in, for the event
    # Its inputs' done events (org.gridgate.job.staging): committed with the QUEUED change.
    events: tuple[NewFact, ...] = ()


def record_submitted(session: Session, site_name: str, placed: Sequence[Submitted], *,
                     actor: str, metrics: Metrics) -> None:
    """The site's job ids, and the jobs QUEUED, in the caller's one unit of work."""
    now = utcnow()
    locked = attempts.lock_many(session, [p.claim.attempt_id for p in placed])
    found = jobs.lock_many(session, [p.claim.job_id for p in placed])
    for item in placed:
        attempt = locked[item.claim.attempt_id]
        if attempt.state is not AttemptState.SUBMITTING:
            continue  # another worker recovered and recorded it meanwhile
        attempt.native_id = item.native_id
        attempt.submitted_at = now
        attempt.lease_until = None
        facts.add_all(session, item.events)  # before QUEUED, in the log's order
        move_attempt(session, attempt, AttemptState.QUEUED, actor=actor, at=now)
        reason = f"submitted to site '{site_name}' as job {item.native_id}"
        if item.staged is not None:
            reason += f" ({item.staged})"
        advance_counted(session, found[item.claim.job_id], JobState.QUEUED, actor=actor,
                        metrics=metrics, at=now, reason=reason)
    session.flush()


def record_rejection(session: Session, claim: Claim, reason: str, *, actor: str,
                     events: Sequence[NewFact] = ()) -> None:
    """The claim cannot run (refused by the site, unstageable): attempt and job FAILED;
    `events` (its staging's) recorded with it."""
    attempt = attempts.lock(session, claim.attempt_id)
    assert attempt is not None
    if attempt.state is not AttemptState.SUBMITTING:
        return
    facts.add_all(session, events)
    end_attempt(session, attempt, AttemptState.FAILED, reason, actor=actor)
    job = jobs.lock(session, claim.job_id)
    assert job is not None
    if hedging.siblings_remain(session, job, attempt):
        note(session, job, f"site '{attempt.site_name}' could not take it: {reason}",
             actor=actor)
    else:
        advance(session, job, JobState.FAILED, actor=actor, reason=reason)
    session.flush()
