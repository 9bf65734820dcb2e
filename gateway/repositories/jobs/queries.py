"""The read side of jobs: what the API shows, as Core statements on a plain Connection.

These are the hottest requests. Going around the ORM session halves their cost, and
GET /jobs/{id}'s statement is built once, with bind parameters. Rows come back as
TypedDicts: typed for callers, and plain dicts at run time (no per-row object to build).
Visibility is an argument (`owner_id`, None for readers who see every job; `led`, the
projects whose members' jobs the reader also reads, as their PI); who may see what is
the service's decision.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple, TypedDict, cast

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

from gateway.db.models import (
    Attempt,
    Event,
    Job,
    JobLabel,
    JobOutput,
    Membership,
    Project,
    User,
)
from gateway.domain.job_origin import JobOrigin
from gateway.domain.states import JobState
from gateway.repositories.identity.projects import PI_ROLE
from gateway.schemas.events import JOB_STATE_TYPE

_jobs, _projects, _users = Job.__table__, Project.__table__, User.__table__
_attempts, _labels, _events = Attempt.__table__, JobLabel.__table__, Event.__table__
_outputs = JobOutput.__table__


class JobRecord(TypedDict):
    """A row of the jobs table."""

    id: str
    owner_id: str
    project_id: int
    name: str
    spec: dict[str, Any]
    state: str
    reason: str | None
    raw_state: str | None
    site_name: str | None
    exit_code: int | None
    cancel_requested: bool
    held: bool
    gate: str | None
    array_job_id: str | None
    array_index: int | None
    origin: str | None
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    ended_at: datetime | None


class JobView(JobRecord):
    """A job as the API shows it: its row, its project's name and its owner's name."""

    project_name: str
    owner_name: str


class AttemptView(TypedDict):
    """A row of the attempts table."""

    id: int
    job_id: str
    number: int
    site_name: str
    tag: str
    native_id: str | None
    state: str
    raw_state: str | None
    reason: str | None
    exit_code: int | None
    step_exit_codes: str | None
    workdir: str
    lease_until: datetime | None
    lease_owner: str | None
    cancel_sent_at: datetime | None
    created_at: datetime
    submitted_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None


class EventView(TypedDict):
    """A row of a job's history."""

    id: int
    job_id: str
    at: datetime
    from_state: str | None
    to_state: str
    reason: str | None
    actor: str
    raw_state: str | None


class OutputView(TypedDict):
    """A collected output of a job."""

    id: int
    job_id: str
    path: str
    size: int
    sha256: str
    location: str
    site_name: str
    site_path: str
    created_at: datetime


class OutputPlace(NamedTuple):
    """Where a job's stdout/stderr is now: its state, its owner's gateway username and
    its newest attempt's site and directory (None before the first attempt)."""

    state: str
    owner: str | None
    site_name: str | None
    workdir: str | None


@dataclass(frozen=True)
class JobFilter:
    # Any of these states (none: every state).
    states: frozenset[JobState] = frozenset()
    site: str | None = None
    project: str | None = None
    labels: tuple[tuple[str, str], ...] = ()
    # Label keys a job must carry, whatever their values (TES's key-only tag filters).
    label_keys: tuple[str, ...] = ()
    name: str | None = None
    # A glob over names ('*' any text, '?' one character; everything else literal).
    name_glob: str | None = None
    # The start of a name, taken literally (TES's `name_prefix`).
    name_prefix: str | None = None
    # The start of a job id (lower-case hex and dashes only: checked by the service).
    id_prefix: str | None = None
    # Only the caller's own jobs, even for readers who see every job (auditors, admins).
    mine: bool = False
    # The tasks of one job array (its whole id), or its task of this index.
    array_job_id: str | None = None
    array_index: int | None = None
    # Only jobs that came in by this door (None: every door).
    origin: JobOrigin | None = None
    # Only jobs created at or after / before these times.
    created_after: datetime | None = None
    created_before: datetime | None = None
    # Oldest first instead of newest first.
    oldest_first: bool = False


_OWNER_NAME = func.coalesce(_users.c.username, _users.c.subject)
_JOB_VIEW = (
    select(*_jobs.c, _projects.c.name.label("project_name"), _OWNER_NAME.label("owner_name"))
    .join(_projects, _projects.c.id == _jobs.c.project_id)
    .join(_users, _users.c.id == _jobs.c.owner_id)
)
_ATTEMPT_PREFIX = "attempt_"
# The projects a user leads as PI (a personal project has no other member: leaving it
# out keeps the reader's own jobs on the owner index).
_memberships = Membership.__table__
# Its own name: inside the job view's statement (which joins `projects`) the subquery
# must not be correlated to the job's project.
_led = Project.__table__.alias("led")


def _led_by(user_id: Any) -> Select[Any]:
    return (select(_memberships.c.project_id)
            .join(_led, _led.c.id == _memberships.c.project_id)
            .where(_memberships.c.user_id == user_id,
                   _memberships.c.role == bindparam("pi_role", PI_ROLE),
                   _led.c.personal_owner_id.is_(None)))


def led_projects(conn: Connection, user_id: str) -> tuple[int, ...]:
    """The ids of the (shared) projects `user_id` is PI of."""
    return tuple(sorted(int(i) for i in conn.execute(_led_by(user_id)).scalars()))


_DETAIL = (
    _JOB_VIEW.add_columns(*(c.label(_ATTEMPT_PREFIX + c.name) for c in _attempts.c))
    .outerjoin(_attempts, _attempts.c.job_id == _jobs.c.id)
    .where(_jobs.c.id == bindparam("job_id"),
           or_(bindparam("see_all", type_=Boolean), _jobs.c.owner_id == bindparam("owner_id"),
               _jobs.c.project_id.in_(_led_by(bindparam("owner_id")))))
    .order_by(_attempts.c.number)
)


def _visible(owner_id: str | None, led: Sequence[int] = ()) -> ColumnElement[bool]:
    if owner_id is None:
        return true()
    if not led:
        return _jobs.c.owner_id == owner_id
    return or_(_jobs.c.owner_id == owner_id, _jobs.c.project_id.in_(led))


def job_detail(conn: Connection, job_id: str, owner_id: str | None
               ) -> tuple[JobView | None, list[AttemptView]]:
    """The job (None if absent or not visible) and its attempts, in one round trip: the
    owner's, a job of a project `owner_id` is PI of, or any (None)."""
    params = {"job_id": job_id, "see_all": owner_id is None, "owner_id": owner_id or "",
              "pi_role": PI_ROLE}
    rows: Sequence[dict[str, Any]]
    if conn.dialect.name == "postgresql":
        rows = _detail_rows_psycopg(conn, params)
    else:
        rows = [dict(row) for row in conn.execute(_DETAIL, params).mappings()]
    if not rows:
        return None, []
    cut = len(_ATTEMPT_PREFIX)
    attempts = [cast(AttemptView, {k[cut:]: v for k, v in row.items()
                                   if k.startswith(_ATTEMPT_PREFIX)})
                for row in rows if row[_ATTEMPT_PREFIX + "id"] is not None]
    # The first row carries the job's columns (and its first attempt's, which readers of
    # a JobView never look at: copying them out would cost more than it saves).
    return cast(JobView, rows[0]), attempts


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


def job_page(conn: Connection, owner_id: str | None, filters: JobFilter, *, limit: int,
             after: tuple[datetime, str] | None, led: Sequence[int] = ()) -> list[JobView]:
    """Up to `limit` visible jobs matching `filters`, newest first (or oldest first), from
    just after the (created_at, id) key `after` (keyset pagination)."""
    query: Select[Any] = _JOB_VIEW.where(_visible(owner_id, led))
    jobs = _jobs.c
    if filters.states:
        query = query.where(jobs.state.in_(sorted(s.value for s in filters.states)))
    if filters.site is not None:
        query = query.where(jobs.site_name == filters.site)
    if filters.project is not None:
        query = query.where(_projects.c.name == filters.project)
    if filters.labels:
        query = query.where(jobs.id.in_(_jobs_with_labels(filters.labels)))
    if filters.label_keys:
        keys = sorted(set(filters.label_keys))
        query = query.where(jobs.id.in_(
            select(_labels.c.job_id).where(_labels.c.key.in_(keys))
            .group_by(_labels.c.job_id).having(func.count() == len(keys))))
    if filters.name is not None:
        query = query.where(jobs.name == filters.name)
    if filters.name_glob is not None:
        query = query.where(jobs.name.regexp_match(glob_regex(filters.name_glob)))
    if filters.name_prefix is not None:
        query = query.where(jobs.name.startswith(filters.name_prefix, autoescape=True))
    if filters.array_job_id is not None:
        query = query.where(jobs.array_job_id == filters.array_job_id)
    if filters.array_index is not None:
        query = query.where(jobs.array_index == filters.array_index)
    if filters.origin is not None:
        stored = filters.origin.stored
        query = query.where(jobs.origin.is_(None) if stored is None else jobs.origin == stored)
    if filters.id_prefix is not None:
        # LIKE 'prefix%' with any wildcard escaped: user text is never a pattern.
        query = query.where(jobs.id.startswith(filters.id_prefix, autoescape=True))
    if filters.created_after is not None:
        query = query.where(jobs.created_at >= filters.created_after)
    if filters.created_before is not None:
        query = query.where(jobs.created_at < filters.created_before)
    if after is not None:
        created, job_id = after
        if filters.oldest_first:
            query = query.where(or_(jobs.created_at > created,
                                    and_(jobs.created_at == created, jobs.id > job_id)))
        else:
            query = query.where(or_(jobs.created_at < created,
                                    and_(jobs.created_at == created, jobs.id < job_id)))
    order = ((jobs.created_at.asc(), jobs.id.asc()) if filters.oldest_first
             else (jobs.created_at.desc(), jobs.id.desc()))
    rows = conn.execute(query.order_by(*order).limit(limit)).mappings()
    return [cast(JobView, dict(row)) for row in rows]


def glob_regex(glob: str) -> str:
    """A name glob as a regular expression both SQLite (Python's re) and PostgreSQL read
    alike: '*' and '?' are wildcards, every other character stands for itself."""
    parts = [".*" if c == "*" else "." if c == "?" else
             f"\\{c}" if c.isascii() and not c.isalnum() else c for c in glob]
    return "(?s)\\A" + "".join(parts) + "\\Z"


def is_visible(conn: Connection, job_id: str, owner_id: str | None,
               led: Sequence[int] = ()) -> bool:
    """Whether the job exists and is visible (owned by `owner_id`, in a project of `led`,
    or any when None)."""
    found = conn.execute(select(_jobs.c.id).where(_jobs.c.id == job_id,
                                                  _visible(owner_id, led)))
    return found.first() is not None


def events(conn: Connection, job_id: str, *, after: int | None = None,
           limit: int | None = None) -> list[EventView]:
    """The job's history, oldest first: all of it, or up to `limit` events after the
    event id `after` (keyset pagination)."""
    query = select(*(_events.c[name] for name in EventView.__annotations__)).where(
        _events.c.job_id == job_id, _events.c.type == JOB_STATE_TYPE)
    if after is not None:
        query = query.where(_events.c.id > after)
    rows = conn.execute(query.order_by(_events.c.id).limit(limit)).mappings()
    return [cast(EventView, dict(row)) for row in rows]


def outputs(conn: Connection, job_id: str, *, after: str | None = None,
            limit: int | None = None) -> list[OutputView]:
    """The job's collected outputs, by path: up to `limit` after the path `after`."""
    query = select(_outputs).where(_outputs.c.job_id == job_id)
    if after is not None:
        query = query.where(_outputs.c.path > after)
    rows = conn.execute(query.order_by(_outputs.c.path).limit(limit)).mappings()
    return [cast(OutputView, dict(row)) for row in rows]


def attempts_of(conn: Connection, job_ids: Sequence[str]) -> dict[str, list[AttemptView]]:
    """The attempts of each of these jobs (by job id, oldest first), in one query."""
    found: dict[str, list[AttemptView]] = {job_id: [] for job_id in job_ids}
    if not job_ids:
        return found
    rows = conn.execute(select(_attempts).where(_attempts.c.job_id.in_(list(job_ids)))
                        .order_by(_attempts.c.job_id, _attempts.c.number)).mappings()
    for row in rows:
        found[row["job_id"]].append(cast(AttemptView, dict(row)))
    return found


def output(conn: Connection, job_id: str, path: str) -> OutputView | None:
    """One output by its exact path."""
    row = conn.execute(select(_outputs).where(_outputs.c.job_id == job_id,
                                              _outputs.c.path == path)).mappings().first()
    return None if row is None else cast(OutputView, dict(row))


def owner_username(conn: Connection, job_id: str) -> str | None:
    """The job owner's gateway username."""
    return conn.scalar(select(_users.c.username).join(_jobs, _jobs.c.owner_id == _users.c.id)
                       .where(_jobs.c.id == job_id))


def output_place(conn: Connection, job_id: str) -> OutputPlace:
    """The job's state, owner and newest attempt (the job must exist)."""
    state, owner = conn.execute(
        select(_jobs.c.state, _users.c.username).join(_users, _users.c.id == _jobs.c.owner_id)
        .where(_jobs.c.id == job_id)).one()
    latest = conn.execute(select(_attempts.c.site_name, _attempts.c.workdir)
                          .where(_attempts.c.job_id == job_id)
                          .order_by(_attempts.c.number.desc()).limit(1)).first()
    if latest is None:
        return OutputPlace(state, owner, None, None)
    return OutputPlace(state, owner, latest.site_name, latest.workdir)


def attempt_tags(conn: Connection, owner_id: str, site: str) -> set[str]:
    """The tags (job directory names) of the owner's attempts at `site`."""
    return set(conn.scalars(
        select(_attempts.c.tag).join(_jobs, _jobs.c.id == _attempts.c.job_id)
        .where(_jobs.c.owner_id == owner_id, _attempts.c.site_name == site)))


def count_by_state_and_site(conn: Connection) -> list[tuple[str, str | None, int]]:
    """How many jobs are in each (state, site)."""
    rows = conn.execute(select(_jobs.c.state, _jobs.c.site_name, func.count())
                        .group_by(_jobs.c.state, _jobs.c.site_name))
    return [(state, site, int(count)) for state, site, count in rows]
