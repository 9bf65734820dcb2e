"""Read side of jobs: who may see which job, pages and cursors. The statements are in
gateway.repositories.jobs.queries (Core on a plain Connection: these are the hottest
requests)."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection

from gateway.domain.errors import Invalid, NotFound
from gateway.domain.jobspec import AUTO
from gateway.domain.principal import Principal
from gateway.repositories.jobs import origin_documents, placements
from gateway.repositories.jobs import queries as repo
from gateway.repositories.jobs.queries import (
    AttemptView,
    EventView,
    JobFilter,
    JobView,
    OutputPlace,
)
from gateway.schemas.placements import PlacementOut
from gateway.services import cursors
from gateway.services.routing.decisions import pinned_out, placement_out
from rules.text import JOB_ID_PREFIX

READ_ALL_ROLES = ("auditor", "admin")
# `label=key=value` filters one list request may combine (a job has at most 64 labels).
MAX_LABEL_FILTERS = 16
# What the API shows of a job (kept under this name for the services that return one).
JobRow = JobView

__all__ = ["MAX_LABEL_FILTERS", "JobFilter", "JobPage", "JobRow", "ensure_readable",
           "ensure_visible", "events",
           "job_detail", "list_jobs", "output_place", "placement",
           "sees_all"]


class NotPlaced(NotFound):
    """A `site: auto` job no routing pass has placed yet."""

    title = "Not placed yet"


@dataclass(frozen=True)
class JobPage:
    jobs: Sequence[JobView]
    next_cursor: str | None


def sees_all(principal: Principal) -> bool:
    """Auditors and admins read every job; everyone else only their own."""
    return any(principal.has_role(role) for role in READ_ALL_ROLES)


def _owner_filter(principal: Principal) -> str | None:
    return None if sees_all(principal) else principal.user_id


def check_id(job_id: str) -> None:
    """NotFound unless `job_id` is a job id's shape (a UUID)."""
    try:
        uuid.UUID(job_id)
    except ValueError:
        raise NotFound(f"No job with id '{job_id}'.") from None


def job_detail(conn: Connection, principal: Principal, job_id: str
               ) -> tuple[JobView, Sequence[AttemptView]]:
    """The job and its attempts in one round trip; NotFound for a job the principal may
    not read (ensure_readable)."""
    check_id(job_id)
    job, attempts = repo.job_detail(conn, job_id, _owner_filter(principal))
    if job is None:
        raise NotFound(f"No job with id '{job_id}'.")
    return job, attempts


def _encode_cursor(row: JobView) -> str:
    raw = json.dumps([row["created_at"].isoformat(), row["id"]]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    """The (created_at, id) a cursor from `_encode_cursor` holds; Invalid for anything
    else. A cursor is user input: every part is checked before it reaches a query."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        decoded = json.loads(raw)
        if not (isinstance(decoded, list) and len(decoded) == 2
                and all(isinstance(part, str) for part in decoded)):
            raise ValueError("not a [created_at, id] pair")
        created = datetime.fromisoformat(decoded[0])
        if created.tzinfo is None:
            raise ValueError("created_at has no time zone")
        return created.astimezone(UTC), str(uuid.UUID(decoded[1]))
    except (ValueError, TypeError, OverflowError) as exc:
        raise Invalid("The cursor is not one this API returned; start again without it.",
                      field="cursor") from exc


def list_jobs(conn: Connection, principal: Principal, filters: JobFilter, *, limit: int,
              cursor: str | None) -> JobPage:
    """The jobs the principal reads (their own, their projects' members' as PI, every
    job as an auditor or admin), newest first, one page at a time (keyset pagination)."""
    if filters.id_prefix is not None and not JOB_ID_PREFIX.matches(filters.id_prefix):
        raise Invalid(str(JOB_ID_PREFIX.problem(filters.id_prefix)), field="id_prefix")
    after = _decode_cursor(cursor) if cursor else None
    owner = principal.user_id if filters.mine else _owner_filter(principal)
    led = () if owner is None or filters.mine else repo.led_projects(conn, owner)
    rows = repo.job_page(conn, owner, filters, limit=limit + 1, after=after, led=led)
    next_cursor = _encode_cursor(rows[limit - 1]) if len(rows) > limit else None
    return JobPage(rows[:limit], next_cursor)


def events(conn: Connection, principal: Principal, job_id: str, *, limit: int,
           cursor: str | None) -> cursors.Page[EventView]:
    """One page of the job's history, oldest first."""
    ensure_readable(conn, principal, job_id)
    after = int(cursors.decode(cursor, (int,))[0]) if cursor else None
    rows = repo.events(conn, job_id, after=after, limit=limit + 1)
    return cursors.page(rows, limit, lambda row: (row["id"],))


def attempts_of(conn: Connection, jobs: Sequence[JobView]) -> dict[str, list[AttemptView]]:
    """The attempts of each of these (visible) jobs, oldest first, in one query."""
    return repo.attempts_of(conn, [job["id"] for job in jobs])


def origin_documents_of(conn: Connection, jobs: Sequence[JobView]
                        ) -> dict[str, dict[str, Any]]:
    """What the door of each of these (visible) jobs received, where it was kept."""
    return origin_documents.of_jobs(conn, [job["id"] for job in jobs])


def ensure_visible(conn: Connection, principal: Principal, job_id: str) -> None:
    """NotFound unless the job is the principal's, or they read every job (auditors,
    admins): who may read its files (logs, outputs)."""
    check_id(job_id)
    if not repo.is_visible(conn, job_id, _owner_filter(principal)):
        raise NotFound(f"No job with id '{job_id}'.")


def ensure_readable(conn: Connection, principal: Principal, job_id: str) -> None:
    """NotFound unless the principal may read this job's record (state, history,
    placement): as `ensure_visible`, and also the PI of the job's project. Changing it
    takes its owner (or an admin) besides."""
    check_id(job_id)
    owner = _owner_filter(principal)
    led = () if owner is None else repo.led_projects(conn, owner)
    if not repo.is_visible(conn, job_id, owner, led):
        raise NotFound(f"No job with id '{job_id}'.")


def output_place(conn: Connection, job_id: str) -> OutputPlace:
    """Where the (existing, already authorized) job's stdout and stderr are now."""
    return repo.output_place(conn, job_id)


def placement(conn: Connection, principal: Principal, job_id: str) -> PlacementOut:
    """The routing decision that placed the job, as it was made; NotFound for other
    users' jobs and for a `site: auto` job no routing pass has placed yet."""
    job, _ = job_detail(conn, principal, job_id)
    record = placements.latest(conn, job_id)
    if record is not None:
        return placement_out(record)
    if job["spec"].get("site", AUTO) != AUTO and job["site_name"] is not None:
        return pinned_out(job_id, job["site_name"], job["created_at"])
    reason = f" ({job['reason']})" if job["reason"] else ""
    raise NotPlaced(f"Job {job_id} has not been placed yet{reason}: a routing pass chooses "
                   "its site when a worker dispatches it. `POST /api/v1/jobs:estimate` "
                   "shows what it would choose now.")
