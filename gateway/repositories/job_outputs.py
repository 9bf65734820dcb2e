"""Job outputs on the write side: dropping the ones fetched into the gateway store."""

from __future__ import annotations

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from gateway.db.models import Job, JobOutput
from gateway.domain.staging import IN_STORE


def lock_job(session: Session, job_id: str) -> tuple[str, str]:
    """(owner id, state) of the job, its row locked until the unit of work ends."""
    job = session.get(Job, job_id, with_for_update=True)
    assert job is not None, f"job {job_id} vanished under its caller"
    return job.owner_id, job.state


def delete_in_store(session: Session, job_id: str) -> set[str]:
    """Delete the job's outputs held in the gateway store; the sha256 of each."""
    digests = set(session.scalars(select(JobOutput.sha256).where(
        JobOutput.job_id == job_id, JobOutput.location == IN_STORE)))
    session.execute(delete(JobOutput).where(JobOutput.job_id == job_id,
                                            JobOutput.location == IN_STORE))
    return digests
