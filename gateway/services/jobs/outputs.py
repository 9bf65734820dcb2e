"""Job outputs: what the API lists and serves (visible as the job is), and dropping the
ones fetched into the gateway store."""

from __future__ import annotations

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from gateway.domain.errors import Conflict, Forbidden, NotFound
from gateway.domain.principal import Principal
from gateway.domain.states import JobState
from gateway.repositories.jobs import outputs as job_outputs
from gateway.repositories.jobs import queries as repo
from gateway.repositories.jobs.queries import OutputView
from gateway.services import cursors
from gateway.services.data.uploads import StoreCleanup
from gateway.services.jobs.queries import ensure_readable, ensure_visible


def list_outputs(conn: Connection, principal: Principal, job_id: str, *, limit: int,
                 cursor: str | None) -> cursors.Page[OutputView]:
    """One page of the job's collected outputs, by path; NotFound for jobs the
    principal cannot see."""
    ensure_visible(conn, principal, job_id)
    after = str(cursors.decode(cursor, (str,))[0]) if cursor else None
    rows = repo.outputs(conn, job_id, after=after, limit=limit + 1)
    return cursors.page(rows, limit, lambda row: (row["path"],))


def get_output(conn: Connection, principal: Principal, job_id: str, path: str) -> OutputView:
    """One output by its exact path (never a file system lookup); NotFound otherwise."""
    ensure_visible(conn, principal, job_id)
    row = repo.output(conn, job_id, path)
    if row is None:
        raise NotFound(f"Job {job_id} has no output '{path}'.")
    return row


def owner_username(conn: Connection, job_id: str) -> str | None:
    """The job owner's gateway username (picks the account on a mapped site)."""
    return repo.owner_username(conn, job_id)


def delete_fetched(session: Session, principal: Principal, job_id: str) -> StoreCleanup:
    """Drop the job's outputs held in the store (only the owner, once the job has
    ended); the blobs to remove after the commit, if nothing else refers to them."""
    ensure_readable(session.connection(), principal, job_id)
    owner_id, state = job_outputs.lock_job(session, job_id)
    if owner_id != principal.user_id:
        raise Forbidden("Only the job's owner can delete its outputs.")
    if not JobState(state).is_final:
        raise Conflict(f"Job {job_id} is {state}; its outputs can be deleted once it "
                       "has ended.")
    digests = job_outputs.delete_in_store(session, job_id)
    session.flush()
    return StoreCleanup(blobs=tuple(sorted(digests)))
