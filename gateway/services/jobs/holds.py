"""Hold and release: keep an ACCEPTED job from being routed or submitted until its owner
lets it go (Slurm's `scontrol hold` / `release`). Services flush; the boundary commits.

A hold is a flag on the job row, taken under the row's lock while the job is ACCEPTED;
the routing pass and the claim step skip held rows (gateway.repositories.jobs.rows, .targets),
as they skip gated ones (dependencies, array throttles: gateway.domain.job_relations),
and a claim moves a job out of ACCEPTED under the same lock, so a job is either held
before any worker took it or refused a hold (409) because one did.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from gateway.db.base import utcnow
from gateway.db.models import Job
from gateway.domain.errors import Conflict, Forbidden
from gateway.domain.job_relations import WAITS_FOR, Gate
from gateway.domain.principal import Principal
from gateway.domain.states import JobState
from gateway.repositories.jobs import rows as jobs
from gateway.services.jobs.queries import JobRow, ensure_readable, job_detail
from gateway.services.lifecycle.transitions import note


def _owned(session: Session, principal: Principal, job_id: str, verb: str) -> Job:
    """The job, locked; NotFound for another user's job, Forbidden for a reader's."""
    ensure_readable(session.connection(), principal, job_id)
    job = jobs.lock(session, job_id)
    assert job is not None
    if job.owner_id != principal.user_id and not principal.has_role("admin"):
        raise Forbidden(f"Only the job's owner can {verb} it.")
    return job


def hold(session: Session, principal: Principal, job_id: str) -> JobRow:
    """Hold an ACCEPTED job (again: no change). Conflict once a worker has taken it."""
    job = _owned(session, principal, job_id, "hold")
    state = JobState(job.state)
    if state is not JobState.ACCEPTED:
        if state.is_final:
            raise Conflict(f"Job {job.id} is already {state.value}; there is nothing to hold.")
        raise Conflict(
            f"Job {job.id} is {state.value}: a worker has already taken it to site "
            f"'{job.site_name}', and the gateway holds only jobs that are still ACCEPTED. "
            f"Cancel it (gridgate cancel {job.id}) if it must not run.")
    if not job.held:
        now = utcnow()
        why = f"held by {principal.display}; release it to let it run"
        job.held, job.reason, job.updated_at = True, why, now
        note(session, job, why, actor=principal.display, at=now)
        session.flush()
    return job_detail(session.connection(), principal, job_id)[0]


def release(session: Session, principal: Principal, job_id: str) -> JobRow:
    """Let a held job be routed and submitted again (not held: no change)."""
    job = _owned(session, principal, job_id, "release")
    state = JobState(job.state)
    if state.is_final:
        raise Conflict(f"Job {job.id} is already {state.value}; there is nothing to release.")
    if job.held:
        now = utcnow()
        why = f"released by {principal.display}"
        if job.gate is not None:  # a hold is not all it waits for
            why += f"; it still waits for {WAITS_FOR[Gate(job.gate)]}"
        job.held, job.reason, job.updated_at = False, why, now
        note(session, job, why, actor=principal.display, at=now)
        session.flush()
    return job_detail(session.connection(), principal, job_id)[0]
