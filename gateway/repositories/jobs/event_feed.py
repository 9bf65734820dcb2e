"""The read side of the event stream (GET /api/v1/events): job state changes from the
`events` table, the transactional outbox every job state change is written to, joined
to their job for visibility and for what a CloudEvent says of the job.

Visibility is an argument, as in gateway.repositories.jobs.queries: `owner_id` None for
readers who see every job.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Select, func, select

from gateway.db.models import Event, Job, Project
from gateway.repositories.jobs.queries import EventView

_events, _jobs, _projects = Event.__table__, Job.__table__, Project.__table__


class FeedRow(EventView):
    """One state change with the job it belongs to."""

    job_name: str
    site_name: str | None
    project_name: str
    owner_id: str


def last_id(conn: Connection) -> int:
    """The highest event id committed so far (0 for none)."""
    return int(conn.execute(select(func.coalesce(func.max(_events.c.id), 0))).scalar_one())


def visible_ids(conn: Connection, owner_id: str | None, job_ids: Sequence[str] | None,
                above: int, up_to: int) -> list[int]:
    """The ids in (above, up_to] of events the reader may see."""
    query = (select(_events.c.id).join(_jobs, _jobs.c.id == _events.c.job_id)
             .where(_events.c.id > above, _events.c.id <= up_to))
    return [int(i) for i in conn.execute(_filtered(query, owner_id, job_ids)).scalars()]


def first_time_after(conn: Connection, after: int) -> datetime | None:
    """When the first event with an id above `after` happened (None: there is none)."""
    found = conn.execute(select(_events.c.at).where(_events.c.id > after)
                         .order_by(_events.c.id).limit(1)).scalar()
    return cast(datetime | None, found)


def visible_after(conn: Connection, owner_id: str | None, job_ids: Sequence[str] | None,
                  after: int, limit: int) -> list[FeedRow]:
    """Up to `limit` events with an id above `after` the reader may see, by id."""
    query = _filtered(_rows().where(_events.c.id > after), owner_id, job_ids)
    return _fetch(conn, query.order_by(_events.c.id).limit(limit))


def rows(conn: Connection, ids: Sequence[int]) -> list[FeedRow]:
    """These events (ids a visible query returned), by id."""
    return _fetch(conn, _rows().where(_events.c.id.in_(ids)).order_by(_events.c.id))


def _rows() -> Select[Any]:
    return (select(_events, _jobs.c.name.label("job_name"), _jobs.c.site_name,
                   _projects.c.name.label("project_name"), _jobs.c.owner_id)
            .join(_jobs, _jobs.c.id == _events.c.job_id)
            .join(_projects, _projects.c.id == _jobs.c.project_id))


def _fetch(conn: Connection, query: Select[Any]) -> list[FeedRow]:
    return [cast(FeedRow, dict(row)) for row in conn.execute(query).mappings()]


def _filtered(query: Select[Any], owner_id: str | None,
              job_ids: Sequence[str] | None) -> Select[Any]:
    if owner_id is not None:
        query = query.where(_jobs.c.owner_id == owner_id)
    if job_ids is not None:
        query = query.where(_events.c.job_id.in_(job_ids))
    return query
