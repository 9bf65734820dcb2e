"""How new events reach streams: the commit wakes readers (a callback in this process,
NOTIFY on PostgreSQL from any process), one hub reads the log for every stream, and a
stream too far behind is cut off to resume from the log. The live tests set the
fallback poll to an hour: an event that arrives at all was delivered by a wake-up."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import httpx
import pytest
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from gateway.api.http import event_hub
from gateway.api.http.event_hub import Subscription
from gateway.repositories.events import signal as event_signal
from gateway.repositories.events.feed import FeedFilter, FeedRow
from gateway.schemas.events import JOB_STATE_TYPE
from tests.api.test_event_stream import Reader, history, ids_and_states, is_end, submit, user
from tests.client.live import LiveGateway, gateway_on
from tests.ssh.conftest import wait_for

HOUR = 3600.0


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with gateway_on(request, tmp_path_factory.mktemp("gateway"), events_poll_seconds=HOUR,
                    events_heartbeat_seconds=HOUR) as gw:
        yield gw


def test_a_commit_wakes_the_streams_without_waiting_for_the_poll(
        gateway: LiveGateway) -> None:
    alice, bob = user(gateway), user(gateway)
    with httpx.Client(base_url=gateway.url, timeout=120) as http, \
            http.stream("GET", "/api/v1/events", headers=alice) as first, \
            http.stream("GET", "/api/v1/events", headers=alice) as second, \
            http.stream("GET", "/api/v1/events", headers=bob) as bobs:
        job_id = submit(http, alice)
        seen = [Reader(stream).until(is_end(job_id)) for stream in (first, second)]
        bob_job = submit(http, bob)
        # Bob's stream shares the hub and gets his own job's events, none of alice's.
        theirs = Reader(bobs).until(is_end(bob_job))
        expected = history(http, alice, job_id)
    assert ids_and_states(seen[0]) == ids_and_states(seen[1]) == expected
    assert {event["subject"] for event in theirs} == {bob_job}


def test_a_commit_with_events_calls_back_in_this_process_and_a_rollback_does_not() -> None:
    engine = create_engine("sqlite://")
    calls: list[int] = []
    remove = event_signal.on_commit(lambda: calls.append(1))
    try:
        with Session(engine) as session:
            session.commit()  # no event written
            session.connection()  # as a writer's transaction has begun
            event_signal.mark(session)
            session.rollback()
            session.commit()
            assert calls == []
            session.connection()
            event_signal.mark(session)
            session.commit()
            assert calls == [1]
            session.commit()  # the mark went with the transaction that wrote
            assert calls == [1]
    finally:
        remove()
    with Session(engine) as session:
        event_signal.mark(session)
        session.commit()
    assert calls == [1]  # unregistered


def test_postgresql_notifies_listeners_in_any_process_at_commit(pg_databases: object) -> None:
    """`listen` hears the NOTIFY of a commit on another connection; no callback in this
    process is registered, so only the database can have told it."""
    url = pg_databases.create()  # type: ignore[attr-defined]
    engine = create_engine(url)
    heard: list[int] = []
    stop = threading.Event()
    thread = threading.Thread(target=event_signal.listen,
                              args=(engine, lambda: heard.append(1), stop), daemon=True)
    thread.start()
    try:
        wait_for("the listener to connect", lambda: heard)  # one call when it listens
        with Session(engine) as session:
            session.connection()
            event_signal.mark(session)
            session.rollback()  # a rolled-back transaction notifies nobody
            session.connection()
            event_signal.mark(session)
            session.commit()
        wait_for("the notification", lambda: len(heard) >= 2)
    finally:
        stop.set()
        thread.join(timeout=30)
        engine.dispose()
        pg_databases.drop(url)  # type: ignore[attr-defined]
    assert len(heard) == 2


def row(event_id: int, owner: str, job: str) -> FeedRow:
    return {"id": event_id, "type": JOB_STATE_TYPE, "job_id": job, "at": datetime.now(UTC),
            "from_state": None, "to_state": "ACCEPTED", "reason": None, "actor": "gateway",
            "raw_state": None, "subject": None, "project_id": None, "data": None,
            "job_name": "x", "site_name": None, "project_name": "p", "owner_id": owner,
            "workflow_id": None}


def test_a_subscription_keeps_what_its_filter_passes_and_is_cut_off_when_too_far_behind(
        monkeypatch: pytest.MonkeyPatch) -> None:
    mine = Subscription(FeedFilter("alice", ("j1",)))
    everything = Subscription(FeedFilter(None, None))
    for event_id, owner, job in [(1, "alice", "j1"), (2, "alice", "j2"), (3, "bob", "j1")]:
        for subscription in (mine, everything):
            subscription.offer(row(event_id, owner, job), b"m%d" % event_id)
    assert mine.take() == [(1, b"m1")]
    assert [event_id for event_id, _ in everything.take()] == [1, 2, 3]
    assert not mine.ready.is_set() and not mine.overflowed
    monkeypatch.setattr(event_hub, "MAX_BUFFERED", 2)
    for event_id in range(4, 8):
        everything.offer(row(event_id, "alice", "j1"), b"m")
    assert everything.overflowed and len(everything.messages) == 2
