"""The event stream's reads: which events a reader may see, and a cursor over the
`events` table (the transactional outbox of every pushed fact) that loses no late
commit.

Ids come from a sequence at insert, not at commit: on PostgreSQL, a transaction holding
id 7 may commit after one holding id 8 was read, so a reader asking only for `id > 8`
would skip 7 for ever. The cursor keeps a floor below which everything is settled, and
above it re-reads the ids it may see and sends those it has not sent yet. An id is
settled once it was first seen `window` seconds ago (or the set of ids held grows past
MAX_TRACKED): a transaction that commits later than that after a higher id was read is
missed. SQLite has one writer at a time, so there ids commit in order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import cast

from sqlalchemy import Connection

from gateway.auth.project_access import PI_ROLE
from gateway.domain.errors import Invalid, NotFound
from gateway.domain.principal import Principal
from gateway.repositories.events import feed as repo
from gateway.repositories.events.feed import FeedFilter, FeedRow
from gateway.repositories.jobs import rows
from gateway.schemas.events import (
    EVENT_TYPES,
    JOB_EVENT_TYPES,
    JOB_STATE_TYPE,
    EventJob,
    GatewayEvent,
    gateway_event,
    job_state_event,
)
from gateway.services.jobs.queries import ensure_readable, sees_all

# A stream without Last-Event-ID starts at the newest id, and re-checks this many ids
# below it: those not committed yet when it started are new to it when they commit.
START_LOOKBACK_IDS = 1000
# Rows one poll reads above the newest id seen (a replay comes in pages of this).
PAGE = 500
# Most ids a cursor holds above its floor; beyond, the oldest seen are settled early.
MAX_TRACKED = 10_000
# `job` filters one stream may give.
MAX_JOB_FILTERS = 100


def feed_filter(conn: Connection, principal: Principal, job_ids: Sequence[str],
                types: Sequence[str], project: str | None = None,
                workflow_id: str | None = None) -> FeedFilter:
    """The reader's filter; NotFound for a job the reader may not read (as GET
    /jobs/{id} answers) or a project they are not a member of, Invalid for an unknown
    event type. (A workflow is checked by the caller: workflows sit above jobs.)"""
    for kind in types:
        if kind not in EVENT_TYPES:
            raise Invalid(f"Unknown event type '{kind}'; the stream carries "
                          f"{', '.join(EVENT_TYPES)}.", field="type")
    if len(job_ids) > MAX_JOB_FILTERS:
        raise Invalid(f"Give at most {MAX_JOB_FILTERS} 'job' filters in one stream.",
                      field="job")
    for job_id in job_ids:
        ensure_readable(conn, principal, job_id)
    everything = sees_all(principal)
    if project is not None and not everything and \
            rows.member_project(conn, principal.user_id, project) is None:
        raise NotFound(f"You are not a member of a project named '{project}'; "
                       "'gridgate projects' lists yours.")
    owner = None if everything else principal.user_id
    return FeedFilter(owner, tuple(dict.fromkeys(job_ids)) or None, project, workflow_id,
                      tuple(dict.fromkeys(types)) or None,
                      () if owner is None else repo.projects_with_role(conn, owner, PI_ROLE))


@dataclass
class FeedCursor:
    """Where one stream is: everything at or below `floor` is settled; `seen` holds the
    ids above it already sent, with when they were first seen (oldest first)."""

    where: FeedFilter
    floor: int
    window: float
    clock: Callable[[], float] = time.monotonic
    seen: dict[int, float] = field(default_factory=dict)

    @property
    def high(self) -> int:
        """The highest id sent (or settled)."""
        return max(self.seen, default=self.floor)

    @classmethod
    def start(cls, conn: Connection, where: FeedFilter, last_event_id: int | None,
              window: float, clock: Callable[[], float] = time.monotonic) -> FeedCursor:
        """A cursor after `last_event_id` (a replay), or at the newest event."""
        top = repo.last_id(conn)
        if last_event_id is not None:
            # An id above every event (from a database since restored, say) would
            # otherwise hold the stream back until new ids pass it: start at the end.
            return cls.resumed(conn, where, max(0, min(last_event_id, top)), window, clock)
        cursor = cls(where, max(0, top - START_LOOKBACK_IDS), window, clock)
        now = clock()
        # What is committed now is history: marked sent, so only later commits go out.
        for event_id in repo.visible_ids(conn, where, cursor.floor, top):
            cursor.seen[event_id] = now
        return cursor

    @classmethod
    def resumed(cls, conn: Connection, where: FeedFilter, last: int, window: float,
                clock: Callable[[], float]) -> FeedCursor:
        """A cursor after event `last`, the reader's last. On PostgreSQL an event with a
        lower id may have committed after the reader got `last` (and the stream broke
        before it came): the events written within `window` seconds before `last` was
        are sent again (a reader may get one twice, with the same id; the Python client
        drops it), as a live cursor would have sent a late commit."""
        if conn.dialect.name == "sqlite" or last == 0:
            return cls(where, last, window, clock)  # one writer: ids commit in order
        floor = max(0, last - START_LOOKBACK_IDS)
        settled = repo.written_before(conn, where, floor, last, window)
        if settled is None:
            return cls(where, last, window, clock)
        cursor = cls(where, floor, window, clock)
        now = clock()
        for event_id in [*settled, last]:
            cursor.seen[event_id] = now
        return cursor

    def poll(self, conn: Connection) -> tuple[list[FeedRow], bool]:
        """The events not sent yet, by id, and whether more are waiting (a full page)."""
        where = self.where
        high = self.high
        late = [i for i in repo.visible_ids(conn, where, self.floor, high)
                if i not in self.seen]
        fresh = repo.visible_after(conn, where, high, PAGE)
        found = sorted(repo.rows(conn, late) + fresh if late else fresh,
                       key=lambda row: row["id"])
        now = self.clock()
        for row in found:
            self.seen[row["id"]] = now
        self._settle(now)
        return found, len(fresh) == PAGE

    def _settle(self, now: float) -> None:
        # `seen` is in first-seen order: settle from its front.
        while self.seen:
            event_id, first = next(iter(self.seen.items()))
            if now - first < self.window and len(self.seen) <= MAX_TRACKED:
                break
            del self.seen[event_id]
            self.floor = max(self.floor, event_id)
        for event_id in [i for i in self.seen if i <= self.floor]:
            del self.seen[event_id]


def replay_gone(conn: Connection, last_event_id: int, window_seconds: float,
                now: datetime) -> int | None:
    """The newest event id, when a replay after `last_event_id` would begin with an event
    older than the replay window (the reader must re-read the state instead); None when
    the replay may go ahead."""
    first = repo.first_time_after(conn, last_event_id)
    if first is None:
        return None
    first = first if first.tzinfo else first.replace(tzinfo=UTC)
    if first >= now - timedelta(seconds=window_seconds):
        return None
    return repo.last_id(conn)


def cloud_event(row: FeedRow, public_url: str) -> GatewayEvent:
    """The CloudEvent of one event: a job's with the job as it is now."""
    if row["type"] == JOB_STATE_TYPE:
        return job_state_event(row["id"], public_url, row["at"], {
            "from": row["from_state"], "to": cast(str, row["to_state"]),
            "reason": row["reason"], "raw_state": row["raw_state"], "actor": row["actor"],
            "job": _job(row)})
    data = dict(row["data"] or {})
    if row["type"] in JOB_EVENT_TYPES:
        data["job"] = _job(row)
        subject = cast(str, row["job_id"])
    else:
        subject = cast(str, row["subject"]).partition(":")[2]
    return gateway_event(row["id"], public_url, row["type"], subject, row["at"], data)


def _job(row: FeedRow) -> EventJob:
    return {"id": cast(str, row["job_id"]), "name": cast(str, row["job_name"]),
            "site": row["site_name"], "project": cast(str, row["project_name"])}
