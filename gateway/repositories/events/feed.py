"""The read side of the event stream (GET /api/v1/events): the `events` table, the
transactional outbox every job state change and every other pushed fact is written to,
joined to the job an event is about (if any) for visibility and for what a CloudEvent
says of the job.

Visibility is an argument, as in gateway.repositories.jobs.queries: `owner_id` None for
readers who see every event; else a job's events are its owner's and its project's PIs'
(`pi_projects`), an allocation's the PIs' of its project (a refused lien's also its
owner's), a workflow's its owner's, a site's nobody's (gateway.schemas.events).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypedDict, cast

from sqlalchemy import ColumnElement, Connection, Select, and_, func, or_, select

from gateway.db.models import Event, Job, Membership, Project
from gateway.db.workflow_models import WorkflowStep
from gateway.schemas.events import (
    ALLOCATION_EVENT_TYPES,
    JOB_EVENT_TYPES,
    OWNED_EVENT_TYPES,
    SUBMITTER_EVENT_TYPES,
    WORKFLOW_EVENT_TYPES,
)

_events, _jobs, _projects = Event.__table__, Job.__table__, Project.__table__
_steps = WorkflowStep.__table__


class FeedRow(TypedDict):
    """One event, with the job it is about (its fields None when it is about none)."""

    id: int
    type: str
    job_id: str | None
    at: datetime
    from_state: str | None
    to_state: str | None
    reason: str | None
    actor: str
    raw_state: str | None
    subject: str | None
    project_id: int | None
    data: dict[str, Any] | None
    job_name: str | None
    site_name: str | None
    project_name: str | None
    owner_id: str | None
    workflow_id: str | None


def last_id(conn: Connection) -> int:
    """The highest event id committed so far (0 for none)."""
    return int(conn.execute(select(func.coalesce(func.max(_events.c.id), 0))).scalar_one())


@dataclass(frozen=True)
class FeedFilter:
    """What one reader's stream shows: whose events (`owner_id` None: every event; else
    that user's jobs', and the job and allocation events of the projects they are PI of), which
    jobs, of which project (by name), workflow and types (None: any)."""

    owner_id: str | None
    job_ids: tuple[str, ...] | None
    project: str | None = None
    workflow_id: str | None = None
    types: tuple[str, ...] | None = None
    pi_projects: tuple[int, ...] = ()

    def passes(self, row: FeedRow) -> bool:
        """Whether an event read without a filter is one this reader's stream shows."""
        return ((self.types is None or row["type"] in self.types)
                and (self.job_ids is None or row["job_id"] in self.job_ids)
                and (self.project is None or row["project_name"] == self.project)
                and (self.workflow_id is None or row["workflow_id"] == self.workflow_id)
                and self._reads(row))

    def _reads(self, row: FeedRow) -> bool:
        if self.owner_id is None:
            return True
        if row["type"] in JOB_EVENT_TYPES and row["project_id"] in self.pi_projects:
            return True  # a member's job, read by the project's PI
        if row["type"] in OWNED_EVENT_TYPES:
            return row["owner_id"] == self.owner_id
        if row["type"] in SUBMITTER_EVENT_TYPES and row["owner_id"] == self.owner_id:
            return True
        return row["type"] in ALLOCATION_EVENT_TYPES and row["project_id"] in self.pi_projects


def projects_with_role(conn: Connection, user_id: str, role: str) -> tuple[int, ...]:
    """The ids of the projects where the user's membership has `role`."""
    found = conn.execute(select(Membership.project_id).where(
        Membership.user_id == user_id, Membership.role == role))
    return tuple(sorted(int(i) for i in found.scalars()))


def visible_ids(conn: Connection, where: FeedFilter, above: int, up_to: int) -> list[int]:
    """The ids in (above, up_to] of events the reader may see."""
    query = (select(_events.c.id).outerjoin(_jobs, _jobs.c.id == _events.c.job_id)
             .where(_events.c.id > above, _events.c.id <= up_to))
    return [int(i) for i in conn.execute(_filtered(query, where)).scalars()]


def written_before(conn: Connection, where: FeedFilter, above: int, up_to: int,
                   seconds: float) -> list[int] | None:
    """The ids in (above, up_to] of events the reader may see that were written at least
    `seconds` before event `up_to` was (or when, unknown); None when that event's
    writing time is unknown."""
    written = conn.execute(select(_events.c.recorded_at)
                           .where(_events.c.id == up_to)).scalar()
    if written is None:
        return None
    cutoff = written - timedelta(seconds=seconds)
    query = (select(_events.c.id).outerjoin(_jobs, _jobs.c.id == _events.c.job_id)
             .where(_events.c.id > above, _events.c.id <= up_to,
                    or_(_events.c.recorded_at.is_(None), _events.c.recorded_at < cutoff)))
    return [int(i) for i in conn.execute(_filtered(query, where)).scalars()]


def first_time_after(conn: Connection, after: int) -> datetime | None:
    """When the first event with an id above `after` happened (None: there is none)."""
    found = conn.execute(select(_events.c.at).where(_events.c.id > after)
                         .order_by(_events.c.id).limit(1)).scalar()
    return cast(datetime | None, found)


def visible_after(conn: Connection, where: FeedFilter, after: int,
                  limit: int) -> list[FeedRow]:
    """Up to `limit` events with an id above `after` the reader may see, by id."""
    query = _filtered(_rows().where(_events.c.id > after), where)
    return _fetch(conn, query.order_by(_events.c.id).limit(limit))


def rows(conn: Connection, ids: Sequence[int]) -> list[FeedRow]:
    """These events (ids a visible query returned), by id."""
    return _fetch(conn, _rows().where(_events.c.id.in_(ids)).order_by(_events.c.id))


def _rows() -> Select[Any]:
    # An event's owner and project are its job's (when it has one): what filters read.
    own = [column for column in _events.c if column.name not in ("owner_id", "project_id")]
    return (select(*own, _jobs.c.name.label("job_name"), _jobs.c.site_name,
                   _projects.c.name.label("project_name"), _owner().label("owner_id"),
                   _project_id().label("project_id"),
                   _steps.c.workflow_id)
            .outerjoin(_jobs, _jobs.c.id == _events.c.job_id)
            .outerjoin(_projects, _projects.c.id == _project_id())
            .outerjoin(_steps, _steps.c.job_id == _jobs.c.id))


def _owner() -> ColumnElement[Any]:
    """Whose the event is: its job's owner, else its own (a workflow's)."""
    return func.coalesce(_jobs.c.owner_id, _events.c.owner_id)


def _project_id() -> ColumnElement[Any]:
    """The project an event is about: its job's, else its own."""
    return func.coalesce(_jobs.c.project_id, _events.c.project_id)


def _fetch(conn: Connection, query: Select[Any]) -> list[FeedRow]:
    found = [cast(FeedRow, dict(row)) for row in conn.execute(query).mappings()]
    for row in found:
        if row["type"] in WORKFLOW_EVENT_TYPES:  # about the workflow itself, not a step
            row["workflow_id"] = (row["subject"] or "").partition(":")[2]
    return found


def _filtered(query: Select[Any], where: FeedFilter) -> Select[Any]:
    if where.types is not None:
        query = query.where(_events.c.type.in_(where.types))
    if where.owner_id is not None:
        query = query.where(_readable(where))
    if where.job_ids is not None:
        query = query.where(_events.c.job_id.in_(where.job_ids))
    if where.project is not None:
        query = query.where(_project_id().in_(
            select(_projects.c.id).where(_projects.c.name == where.project)))
    if where.workflow_id is not None:
        query = query.where(or_(
            _events.c.job_id.in_(select(_steps.c.job_id)
                                 .where(_steps.c.workflow_id == where.workflow_id)),
            _events.c.subject == f"workflow:{where.workflow_id}"))
    return query


def _readable(where: FeedFilter) -> ColumnElement[bool]:
    # FeedFilter.passes in SQL (a job's events carry the job's id: the join has its owner;
    # of the other types only a workflow's and a refused lien's have an owner).
    owned = _owner() == where.owner_id
    if not where.pi_projects:
        return owned
    return or_(owned, and_(_events.c.type.in_(ALLOCATION_EVENT_TYPES),
                           _events.c.project_id.in_(where.pi_projects)),
               and_(_events.c.type.in_(JOB_EVENT_TYPES),
                    _jobs.c.project_id.in_(where.pi_projects)))
