"""The event stream's reads of the outbox (gateway.services.events.feed): a late
commit below an id already read is still delivered (PostgreSQL assigns ids at insert,
not at commit), to a live stream and to one resumed after a break, and what a cursor
holds stays bounded."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from gateway.db.base import utcnow
from gateway.db.models import Event
from gateway.repositories.events import feed as repo
from gateway.repositories.events.feed import FeedFilter
from gateway.runtime import Runtime
from gateway.services.events import feed as event_feed
from gateway.services.events.feed import FeedCursor
from tests.conftest import MakeUser, TestUser


class Clock:
    """A clock the test moves: the cursor settles ids by age."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _job(client: TestClient, user: TestUser) -> str:
    response = client.post("/api/v1/jobs", headers=user.headers,
                           json={"name": "quiet", "executable": "/bin/true"})
    assert response.status_code == 202, response.text
    job_id: str = response.json()["id"]
    return job_id


def _record(session: Session, job_id: str, reason: str) -> None:
    session.add(Event(job_id=job_id, at=utcnow(), from_state="ACCEPTED",
                      to_state="ACCEPTED", reason=reason, actor="test"))
    session.flush()  # the id is assigned now; the commit comes when the test says


def _cursor(runtime: Runtime, user: TestUser, job_id: str, clock: Clock) -> FeedCursor:
    with runtime.reading() as conn:
        where = event_feed.feed_filter(conn, user.principal, [job_id], [])
        return FeedCursor.start(conn, where, None, window=60.0, clock=clock)


def _poll(runtime: Runtime, cursor: FeedCursor) -> list[str | None]:
    with runtime.reading() as conn:
        rows, more = cursor.poll(conn)
    assert not more
    return [row["reason"] for row in rows]


@pytest.mark.postgres
@pytest.mark.parametrize("database_kind", ["postgresql"], indirect=True)
def test_an_event_committed_after_a_higher_id_was_read_is_still_delivered(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    job_id = _job(client, user)
    cursor = _cursor(runtime, user, job_id, Clock())
    early, late = runtime.sessions(), runtime.sessions()
    try:
        _record(early, job_id, "early")  # takes the lower id, its transaction held open
        _record(late, job_id, "late")
        late.commit()
        assert _poll(runtime, cursor) == ["late"]
        high = cursor.high
        early.commit()
        # The gap is real: a reader asking only for ids above the last one read skips it.
        with runtime.reading() as conn:
            assert repo.visible_after(conn, FeedFilter(None, (job_id,)), high, 10) == []
        assert _poll(runtime, cursor) == ["early"]
        assert _poll(runtime, cursor) == []  # each event once
    finally:
        early.close()
        late.close()


@pytest.mark.postgres
def test_a_stream_starts_after_what_is_committed_and_settles_what_it_sent(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    job_id = _job(client, user)  # its ACCEPTED event is history when the cursor starts
    clock = Clock()
    cursor = _cursor(runtime, user, job_id, clock)
    assert _poll(runtime, cursor) == []
    with runtime.sessions() as session:
        _record(session, job_id, "first")
        session.commit()
    assert _poll(runtime, cursor) == ["first"]
    clock.now = 61.0  # past the window: everything sent is settled, nothing is held
    assert _poll(runtime, cursor) == []
    assert cursor.seen == {}
    assert cursor.floor == cursor.high > 0
    with runtime.sessions() as session:
        _record(session, job_id, "second")
        session.commit()
    assert _poll(runtime, cursor) == ["second"]


@pytest.mark.postgres
def test_a_resume_from_an_id_past_every_event_starts_at_the_end(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    job_id = _job(client, user)
    with runtime.reading() as conn:
        where = event_feed.feed_filter(conn, user.principal, [job_id], [])
        cursor = FeedCursor.start(conn, where, 10**15, window=60.0, clock=Clock())
    assert _poll(runtime, cursor) == []
    with runtime.sessions() as session:
        _record(session, job_id, "new")
        session.commit()
    assert _poll(runtime, cursor) == ["new"]


@pytest.mark.postgres
@pytest.mark.parametrize("database_kind", ["postgresql"], indirect=True)
def test_a_resumed_stream_sends_an_event_that_committed_after_the_readers_last(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    job_id = _job(client, user)
    with runtime.sessions() as session:
        _record(session, job_id, "old")
        # Everything so far was written an hour ago: long settled.
        session.execute(update(Event).where(Event.job_id == job_id)
                        .values(recorded_at=utcnow() - timedelta(hours=1)))
        session.commit()
    reader = _cursor(runtime, user, job_id, Clock())
    early, late = runtime.sessions(), runtime.sessions()
    try:
        _record(early, job_id, "early")  # takes the lower id, its transaction held open
        _record(late, job_id, "late")
        late.commit()
        assert _poll(runtime, reader) == ["late"]
        last = reader.high
        early.commit()  # ...and the reader's stream broke before "early" reached it
        with runtime.reading() as conn:
            where = event_feed.feed_filter(conn, user.principal, [job_id], [])
            resumed = FeedCursor.start(conn, where, last, window=60.0, clock=Clock())
        # Sent: what may have committed after `last` (written shortly before it); not
        # `last` itself, nor what was settled long before.
        assert _poll(runtime, resumed) == ["early"]
        assert _poll(runtime, resumed) == []
    finally:
        early.close()
        late.close()
