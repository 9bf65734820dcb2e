"""Read side of job outputs: what the API lists and serves, visible as the job is."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, select

from gateway.auth.principal import Principal
from gateway.db.models import Job as JobModel
from gateway.db.models import JobOutput, User
from gateway.domain.errors import NotFound
from gateway.services.job_queries import ensure_visible

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
