"""The read side of the event stream (GET /api/v1/events): job state changes from the
`events` table, the transactional outbox every job state change is written to, joined
to their job for visibility and for what a CloudEvent says of the job.

Visibility is an argument, as in gateway.repositories.jobs.queries: `owner_id` None for
readers who see every job.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Select, func, select

from gateway.db.models import Event, Job, Project
from gateway.db.workflow_models import WorkflowStep
from gateway.repositories.jobs.queries import EventView

_events, _jobs, _projects = Event.__table__, Job.__table__, Project.__table__
_steps = WorkflowStep.__table__


class FeedRow(EventView):
    """One state change with the job it belongs to."""

    job_name: str
    site_name: str | None
    project_name: str
    owner_id: str
    workflow_id: str | None


def last_id(conn: Connection) -> int:
    """The highest event id committed so far (0 for none)."""
    return int(conn.execute(select(func.coalesce(func.max(_events.c.id), 0))).scalar_one())


@dataclass(frozen=True)
class FeedFilter:
    """What one reader's stream shows: whose jobs (None: every job), which jobs, of
    which project (by name) and workflow (None: any)."""

    owner_id: str | None
    job_ids: tuple[str, ...] | None
    project: str | None = None
    workflow_id: str | None = None

    def passes(self, row: FeedRow) -> bool:
        """Whether an event read without a filter is one this reader's stream shows."""
        return ((self.owner_id is None or row["owner_id"] == self.owner_id)
                and (self.job_ids is None or row["job_id"] in self.job_ids)
                and (self.project is None or row["project_name"] == self.project)
                and (self.workflow_id is None or row["workflow_id"] == self.workflow_id))


def visible_ids(conn: Connection, where: FeedFilter, above: int, up_to: int) -> list[int]:
    """The ids in (above, up_to] of events the reader may see."""
    query = (select(_events.c.id).join(_jobs, _jobs.c.id == _events.c.job_id)
             .where(_events.c.id > above, _events.c.id <= up_to))
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
    return (select(_events, _jobs.c.name.label("job_name"), _jobs.c.site_name,
                   _projects.c.name.label("project_name"), _jobs.c.owner_id,
                   _steps.c.workflow_id)
            .join(_jobs, _jobs.c.id == _events.c.job_id)
            .join(_projects, _projects.c.id == _jobs.c.project_id)
            .outerjoin(_steps, _steps.c.job_id == _jobs.c.id))


def _fetch(conn: Connection, query: Select[Any]) -> list[FeedRow]:
    return [cast(FeedRow, dict(row)) for row in conn.execute(query).mappings()]


def _filtered(query: Select[Any], where: FeedFilter) -> Select[Any]:
    if where.owner_id is not None:
        query = query.where(_jobs.c.owner_id == where.owner_id)
    if where.job_ids is not None:
        query = query.where(_events.c.job_id.in_(where.job_ids))
    if where.project is not None:
        query = query.where(_jobs.c.project_id.in_(
            select(_projects.c.id).where(_projects.c.name == where.project)))
    if where.workflow_id is not None:
        query = query.where(_events.c.job_id.in_(
            select(_steps.c.job_id).where(_steps.c.workflow_id == where.workflow_id)))
    return query
