"""A queued job's predicted start, kept current by the routing step from each pass's queue
snapshots (gateway.services.routing.predictions): announced as an
`org.gridgate.job.prediction` event only when it moves more than the threshold from the
one last announced, its placement's at first. The local site's adapter answers with a
snapshot the test writes (SQLite and PostgreSQL)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from adapters.snapshot import JobPhase, QueueSnapshot, SnapshotJob
from gateway.db.engine import transaction
from gateway.db.models import Attempt, Event, Job
from gateway.domain.states import AttemptState
from gateway.repositories.jobs import placements
from gateway.runtime import Runtime
from gateway.schemas.events import JOB_PREDICTION_TYPE
from gateway.schemas.placements import predicted_start
from gateway.services.routing.predictions import (
    PROJECTION,
    SCHEDULER,
    SiteQueue,
)
from gateway.services.sites.registry import SiteRegistry
from gateway.worker.loop import Worker
from gateway.worker.route import route_jobs
from tests.conftest import MakeUser
from tests.worker.test_worker_local import post

AUTO = {"name": "waits", "executable": "/bin/true"}
NATIVE = "4242"


class SnapshotAdapter:
    """The local site's adapter, but its queue snapshot is the one the test set."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.snapshot: QueueSnapshot | None = None
        self.asked = 0

    def queue_snapshot(self) -> QueueSnapshot:
        assert self.snapshot is not None
        self.asked += 1
        return self.snapshot

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.fixture
def faked(runtime: Runtime) -> Iterator[tuple[Runtime, SnapshotAdapter]]:
    local = runtime.sites.get("local")
    adapter = SnapshotAdapter(local.adapter)
    registry = SiteRegistry([dataclasses.replace(local, adapter=adapter)])  # type: ignore[arg-type]
    yield dataclasses.replace(runtime, sites=registry), adapter


def queue(taken: datetime, estimate: datetime | None, *ahead: SnapshotJob) -> QueueSnapshot:
    """The site's queue: `ahead` running, then the gateway's job pending."""
    ours = SnapshotJob(NATIVE, JobPhase.PENDING, "PD", cores=1, time_limit_seconds=600,
                       estimated_start=estimate, name="gw-x")
    return QueueSnapshot(taken, 1, 0, (), (*ahead, ours))


def queued_at_local(runtime: Runtime, job_id: str, submitted: datetime) -> None:
    """The job as the submit step leaves it: QUEUED, its attempt the snapshot's NATIVE."""
    with transaction(runtime.sessions) as session:
        job = session.get(Job, job_id)
        assert job is not None
        job.state = "QUEUED"
        session.add(Attempt(job_id=job_id, number=1, site_name="local", tag="gw-x",
                            native_id=NATIVE, state=AttemptState.QUEUED, workdir="/tmp/x",
                            submitted_at=submitted))


def predictions(runtime: Runtime, job_id: str) -> list[Event]:
    with runtime.sessions() as session:
        return list(session.scalars(select(Event).where(
            Event.job_id == job_id, Event.type == JOB_PREDICTION_TYPE).order_by(Event.id)))


def test_a_move_beyond_the_threshold_is_announced_once(
        client: TestClient, faked: tuple[Runtime, SnapshotAdapter],
        make_user: MakeUser) -> None:
    runtime, adapter = faked
    user = make_user()
    worker = Worker(runtime, "w")
    now = datetime.now(UTC)
    adapter.snapshot = QueueSnapshot(now, 1, 1, (), ())
    job_id = post(client, user.headers, AUTO)
    assert route_jobs(worker.ctx) is True
    with runtime.sessions() as session:
        decision = placements.latest(session.connection(), job_id)
    assert decision is not None and decision.chosen == ("local",)
    placed = predicted_start(decision.decided_at, decision.candidates, ("local",))
    assert placed is not None
    # Submitted to the site and waiting there (the submit step's rows, written here: the
    # snapshot, not the local scheduler, says where it stands).
    queued_at_local(runtime, job_id, now)

    # The scheduler's estimate moves 5 minutes from the placement's prediction: within
    # the 10-minute threshold, nothing is announced (another job makes the pass run).
    adapter.snapshot = queue(now, placed + timedelta(minutes=5))
    post(client, user.headers, AUTO)
    assert route_jobs(worker.ctx) is True
    assert predictions(runtime, job_id) == []

    # 20 minutes: one event, the placement's prediction as the previous one.
    later = placed + timedelta(minutes=20)
    adapter.snapshot = queue(now, later)
    post(client, user.headers, AUTO)
    assert route_jobs(worker.ctx) is True
    [event] = predictions(runtime, job_id)
    assert event.data == {"predicted_start": iso(later), "previous": iso(placed),
                          "site": "local", "basis": SCHEDULER}
    with runtime.sessions() as session:
        attempt = session.scalars(select(Attempt).where(Attempt.job_id == job_id)).one()
        assert attempt.predicted_start == later

    # Within the threshold of the one announced (not of the placement's): nothing more.
    adapter.snapshot = queue(now, later + timedelta(minutes=9))
    post(client, user.headers, AUTO)
    assert route_jobs(worker.ctx) is True
    assert len(predictions(runtime, job_id)) == 1


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def test_without_the_schedulers_estimate_the_live_queue_is_projected(
        runtime: Runtime) -> None:
    entry = runtime.sites.get("local")
    cores = entry.shape.max_nodes * entry.shape.cores_per_node
    taken = datetime(2030, 1, 1, tzinfo=UTC)
    # Every core held for another half hour: the job starts when they free.
    holder = SnapshotJob("1", JobPhase.RUNNING, "R", cores=cores, time_limit_seconds=3600,
                         started_at=taken - timedelta(minutes=30))
    site = SiteQueue(entry, queue(taken, None, holder))
    assert site.pending[0].native_id == NATIVE
    prediction = site.predict(0, 0)
    assert prediction is not None
    assert (prediction.start, prediction.basis) == (taken + timedelta(minutes=30), PROJECTION)
    # The scheduler's own estimate wins where it gave one.
    site = SiteQueue(entry, queue(taken, taken + timedelta(hours=2), holder))
    assert site.predict(0, 0) == type(prediction)(taken + timedelta(hours=2), SCHEDULER)


def test_without_a_routing_pass_queued_jobs_are_predicted_again_when_due(
        client: TestClient, faked: tuple[Runtime, SnapshotAdapter],
        make_user: MakeUser) -> None:
    # A job that named its site waits in the site's queue, and no job waits for routing:
    # the refresh asks the site once per prediction_refresh_seconds of the worker's clock.
    runtime, adapter = faked
    now = [datetime(2030, 1, 1, tzinfo=UTC)]
    runtime = dataclasses.replace(
        runtime, clock=lambda: now[0],
        settings=runtime.settings.model_copy(update={"prediction_refresh_seconds": 60}))
    user = make_user()
    job_id = post(client, user.headers, {**AUTO, "site": "local"})
    queued_at_local(runtime, job_id, now[0])
    worker = Worker(runtime, "w")
    first = now[0] + timedelta(hours=1)
    adapter.snapshot = queue(now[0], first)
    every = timedelta(seconds=runtime.settings.prediction_refresh_seconds)
    # The worker's start counts as an ask: nothing until an interval later.
    assert route_jobs(worker.ctx, None, worker.predictions) is False
    assert adapter.asked == 0
    now[0] += every
    assert route_jobs(worker.ctx, None, worker.predictions) is False
    assert adapter.asked == 1
    [event] = predictions(runtime, job_id)
    assert event.data["previous"] is None and event.data["predicted_start"] == iso(first)

    # Not due yet: the site is not asked again, whatever its queue says now.
    later = first + timedelta(hours=1)
    adapter.snapshot = queue(now[0], later)
    now[0] += every - timedelta(seconds=1)
    assert worker.predictions.run() == 0 and adapter.asked == 1

    now[0] += timedelta(seconds=1)
    assert worker.predictions.run() == 1 and adapter.asked == 2
    assert [e.data["predicted_start"] for e in predictions(runtime, job_id)] == [
        iso(first), iso(later)]
