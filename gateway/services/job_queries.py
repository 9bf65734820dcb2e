"""Read side of jobs: what the API shows, as Core rows on a plain Connection.

These are the hottest requests. Going around the ORM session halves their cost, and
GET /jobs/{id}'s statement is built once, with bind parameters.
"""

from __future__ import annotations

import base64
import functools
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    ColumnElement,
    Connection,
    Select,
    and_,
    bindparam,
    func,
    or_,
    select,
    true,
    tuple_,
)

from gateway.auth.principal import Principal
from gateway.db.models import Attempt, Event, Job, JobLabel, Project, User
from gateway.domain.errors import Invalid, NotFound
from gateway.domain.states import JobState

READ_ALL_ROLES = ("auditor", "admin")
# `label=key=value` filters one list request may combine (a job has at most 64 labels).
MAX_LABEL_FILTERS = 16
_jobs, _projects, _users = Job.__table__, Project.__table__, User.__table__
_attempts, _labels, _events = Attempt.__table__, JobLabel.__table__, Event.__table__
JobRow = Mapping[Any, Any]

_OWNER_NAME = func.coalesce(_users.c.username, _users.c.subject)
_JOB_VIEW = (
    select(*_jobs.c, _projects.c.name.label("project_name"), _OWNER_NAME.label("owner_name"))
    .join(_projects, _projects.c.id == _jobs.c.project_id)
    .join(_users, _users.c.id == _jobs.c.owner_id)
)
_ATTEMPT_PREFIX = "attempt_"
_DETAIL = (
    _JOB_VIEW.add_columns(*(c.label(_ATTEMPT_PREFIX + c.name) for c in _attempts.c))
    .outerjoin(_attempts, _attempts.c.job_id == _jobs.c.id)
    .where(_jobs.c.id == bindparam("job_id"),
           or_(bindparam("see_all", type_=Boolean), _jobs.c.owner_id == bindparam("owner_id")))
    .order_by(_attempts.c.number)
)


@dataclass(frozen=True)
class JobFilter:
    state: JobState | None = None
    site: str | None = None
    project: str | None = None
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class JobPage:
    jobs: Sequence[JobRow]
    next_cursor: str | None


def sees_all(principal: Principal) -> bool:
    """Auditors and admins read every job; everyone else only their own."""
    return any(principal.has_role(role) for role in READ_ALL_ROLES)


def visible_to(principal: Principal) -> ColumnElement[bool]:
    return true() if sees_all(principal) else _jobs.c.owner_id == principal.user_id


def _check_id(job_id: str) -> None:
    try:
        uuid.UUID(job_id)
    except ValueError:
        raise NotFound(f"No job with id '{job_id}'.") from None


def job_detail(conn: Connection, principal: Principal, job_id: str
               ) -> tuple[JobRow, Sequence[JobRow]]:
    """The job and its attempts in one round trip; NotFound for other users' jobs."""
    _check_id(job_id)
    params = {"job_id": job_id, "see_all": sees_all(principal), "owner_id": principal.user_id}
    rows: Sequence[JobRow]
    if conn.dialect.name == "postgresql":
        rows = _detail_rows_psycopg(conn, params)
    else:
        rows = conn.execute(_DETAIL, params).mappings().all()
    if not rows:
        raise NotFound(f"No job with id '{job_id}'.")
    cut = len(_ATTEMPT_PREFIX)
    attempts = [{k[cut:]: v for k, v in row.items() if k.startswith(_ATTEMPT_PREFIX)}
                for row in rows if row[_ATTEMPT_PREFIX + "id"] is not None]
    return rows[0], attempts


def _detail_rows_psycopg(conn: Connection, params: dict[str, Any]) -> list[dict[str, Any]]:
    """_DETAIL straight on the psycopg connection: SQLAlchemy's per-row processing costs
    more than the query on the hottest read. PostgreSQL hands back the same Python
    types (aware datetimes, decoded JSON) that the typed path would."""
    from psycopg.rows import dict_row

    sql = _compiled_detail(conn.dialect)
    raw = conn.connection.driver_connection
    assert raw is not None
    with raw.cursor(row_factory=dict_row) as cursor:
        cursor.execute(sql, params)
        rows: list[dict[str, Any]] = cursor.fetchall()
    return rows


@functools.cache
def _compiled_detail(dialect: Any) -> str:
    return str(_DETAIL.compile(dialect=dialect))


def _encode_cursor(row: JobRow) -> str:
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


def _jobs_with_labels(labels: tuple[tuple[str, str], ...]) -> Select[Any]:
    """Ids of the jobs carrying every (key, value) pair: one grouped scan of the labels
    index whatever the number of pairs. (One EXISTS per pair made the planner's work grow
    with their number: minutes for a few hundred on PostgreSQL.) A job has at most one
    value per key, so it matches every distinct pair exactly when it matches that many."""
    wanted = sorted(set(labels))
    return (select(_labels.c.job_id)
            .where(tuple_(_labels.c.key, _labels.c.value).in_(wanted))
            .group_by(_labels.c.job_id)
            .having(func.count() == len(wanted)))


def list_jobs(conn: Connection, principal: Principal, filters: JobFilter, *, limit: int,
              cursor: str | None) -> JobPage:
    """The principal's jobs, newest first, one page at a time (keyset pagination)."""
    query: Select[Any] = _JOB_VIEW.where(visible_to(principal))
    jobs = _jobs.c
    if filters.state is not None:
        query = query.where(jobs.state == filters.state.value)
    if filters.site is not None:
        query = query.where(jobs.site_name == filters.site)
    if filters.project is not None:
        query = query.where(_projects.c.name == filters.project)
    if filters.labels:
        query = query.where(jobs.id.in_(_jobs_with_labels(filters.labels)))
    if cursor:
        created, job_id = _decode_cursor(cursor)
        query = query.where(or_(jobs.created_at < created,
                                and_(jobs.created_at == created, jobs.id < job_id)))
    rows = conn.execute(query.order_by(jobs.created_at.desc(), jobs.id.desc())
                        .limit(limit + 1)).mappings().all()
    next_cursor = _encode_cursor(rows[limit - 1]) if len(rows) > limit else None
    return JobPage(rows[:limit], next_cursor)


def events(conn: Connection, principal: Principal, job_id: str) -> Sequence[JobRow]:
    """The job's history, oldest first."""
    ensure_visible(conn, principal, job_id)
    return conn.execute(select(_events).where(_events.c.job_id == job_id)
                        .order_by(_events.c.id)).mappings().all()


def ensure_visible(conn: Connection, principal: Principal, job_id: str) -> None:
    """NotFound unless the principal may see this job."""
    _check_id(job_id)
    found = conn.execute(select(_jobs.c.id).where(_jobs.c.id == job_id, visible_to(principal)))
    if found.first() is None:
        raise NotFound(f"No job with id '{job_id}'.")
