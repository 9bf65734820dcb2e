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


def kept_size(session: Session, owner_id: str, site: str, site_path: str) -> int | None:
    """Size of the file an owner's job kept at `site_path` of `site`, if one is recorded."""
    size: int | None = session.scalars(
        select(JobOutput.size).join(Job, Job.id == JobOutput.job_id).where(
            Job.owner_id == owner_id, JobOutput.site_name == site,
            JobOutput.site_path == site_path).limit(1)).first()
    return size
