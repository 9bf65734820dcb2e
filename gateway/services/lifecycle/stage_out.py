"""Stage-out: a worker takes the lease on a finished run whose outputs nobody is
collecting, and, only while it still holds that lease, records the outputs it collected
and the job's end (a worker that died mid-way is replaced after the lease, and a late
one's result is discarded). The collecting itself is gateway.worker.staging.stage_out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy.orm import Session

from adapters.reasons import because
from gateway.db.base import utcnow
from gateway.domain.jobspec import JobSpec
from gateway.domain.states import AttemptState, JobState, Reason
from gateway.metrics import Metrics
from gateway.repositories.events import facts
from gateway.repositories.events.facts import NewFact
from gateway.repositories.jobs import attempts
from gateway.repositories.jobs import rows as jobs
from gateway.repositories.jobs.rows import NewOutput
from gateway.services.lifecycle.holder import LeaseHolder
from gateway.services.lifecycle.transitions import advance_counted

__all__ = ["NewOutput", "StageOutClaim", "claim_stage_outs", "finish_stage_out"]


@dataclass(frozen=True)
class StageOutClaim:
    """A finished run whose outputs this worker holds the lease to collect."""

    attempt_id: int
    job_id: str
    workdir: str
    spec: JobSpec
    owner: str | None
    owner_id: str
    exit_code: int | None = None
    completed: bool = False  # the run completed (not failed): its outputs are delivered


def claim_stage_outs(session: Session, holder: LeaseHolder, site_name: str,
                     limit: int) -> list[StageOutClaim]:
    """Take the lease on runs that ended and whose outputs nobody is collecting."""
    now = utcnow()
    leased = attempts.lease_stale(
        session, site_name, [AttemptState.COMPLETED, AttemptState.FAILED],
        JobState.STAGING_OUT, now, holder.worker_id, now + holder.staging_lease, limit)
    return [StageOutClaim(a.attempt.id, a.attempt.job_id, a.attempt.workdir,
                          jobs.stored_spec(a.spec), a.owner,
                          a.owner_id, a.attempt.exit_code,
                          a.attempt.state == AttemptState.COMPLETED)
            for a in leased]


def finish_stage_out(session: Session, holder: LeaseHolder, site_name: str,
                     claim: StageOutClaim, outputs: Sequence[NewOutput], note: str | None,
                     failure: str | None, *, metrics: Metrics,
                     events: Sequence[NewFact] = (),
                     step_codes: Sequence[int] | None = None) -> None:
    """Record the collected outputs (and, for a job of several steps, each step's exit
    code) and end the job, if the holder still holds the lease (otherwise another worker
    took over and finishes it); `events` (the fetches' done or failed ones) with them."""
    attempt = attempts.lock(session, claim.attempt_id)
    assert attempt is not None
    if attempt.lease_owner != holder.worker_id or attempt.lease_until is None:
        return
    job = jobs.lock(session, claim.job_id)
    assert job is not None
    attempt.lease_until = attempt.lease_owner = None
    if step_codes is not None:
        attempt.step_exit_codes = ",".join(str(code) for code in step_codes)
    facts.add_all(session, events)  # before the job's final state, in the log's order
    run_reason = attempt.reason or (
        because(Reason.EXIT_CODE, attempt.exit_code, " ") if attempt.exit_code else None)
    jobs.replace_outputs(session, claim.job_id, site_name, outputs, utcnow())
    if failure is not None:
        target = JobState.FAILED
        note = f"{Reason.STAGE_OUT_FAILED}: {failure}"
    else:
        target = JobState(attempt.state.value)
    reason = f"{run_reason}; {note}" if run_reason else note
    advance_counted(session, job, target, actor=holder.actor, metrics=metrics,
                    reason=reason)
    session.flush()
