"""Job outputs: what the API lists and serves (visible as the job is), and dropping the
ones fetched into the gateway store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, delete, select
from sqlalchemy.orm import Session

from gateway.auth.principal import Principal
from gateway.db.models import Job as JobModel
from gateway.db.models import JobOutput, User
from gateway.domain.errors import Conflict, Forbidden, NotFound
from gateway.domain.staging import IN_STORE
from gateway.domain.states import JobState
from gateway.services.job_queries import ensure_visible
from gateway.services.uploads import StoreCleanup

_outputs = JobOutput.__table__
OutputRow = Mapping[Any, Any]


def list_outputs(conn: Connection, principal: Principal, job_id: str) -> Sequence[OutputRow]:
    """The job's collected outputs, by path; NotFound for jobs the principal cannot see."""
    ensure_visible(conn, principal, job_id)
    return conn.execute(select(_outputs).where(_outputs.c.job_id == job_id)
                        .order_by(_outputs.c.path)).mappings().all()


def get_output(conn: Connection, principal: Principal, job_id: str, path: str) -> OutputRow:
    """One output by its exact path (never a file system lookup); NotFound otherwise."""
    ensure_visible(conn, principal, job_id)
    row = conn.execute(select(_outputs).where(_outputs.c.job_id == job_id,
                                              _outputs.c.path == path)).mappings().first()
    if row is None:
        raise NotFound(f"Job {job_id} has no output '{path}'.")
    return row


def owner_username(conn: Connection, job_id: str) -> str | None:
    """The job owner's gateway username (picks the account on a mapped site)."""
    return conn.scalar(select(User.username).join(JobModel, JobModel.owner_id == User.id)
                       .where(JobModel.id == job_id))


def delete_fetched(session: Session, principal: Principal, job_id: str) -> StoreCleanup:
    """Drop the job's outputs held in the store (only the owner, once the job has
    ended); the blobs to remove after the commit, if nothing else refers to them."""
    ensure_visible(session.connection(), principal, job_id)
    job = session.get(JobModel, job_id, with_for_update=True)
    assert job is not None
    if job.owner_id != principal.user_id:
        raise Forbidden("Only the job's owner can delete its outputs.")
    if not JobState(job.state).is_final:
        raise Conflict(f"Job {job_id} is {job.state}; its outputs can be deleted once it "
                       "has ended.")
    digests = set(session.scalars(select(JobOutput.sha256).where(
        JobOutput.job_id == job_id, JobOutput.location == IN_STORE)))
    session.execute(delete(JobOutput).where(JobOutput.job_id == job_id,
                                            JobOutput.location == IN_STORE))
    session.flush()
    return StoreCleanup(blobs=tuple(sorted(digests)))
