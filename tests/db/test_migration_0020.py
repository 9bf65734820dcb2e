"""Migration 0020 (attempts' announced predicted starts) goes down and up again with jobs,
attempts and events in the database, on SQLite (a batch rebuild of `attempts` going down)
and PostgreSQL: down, the column and the prediction events go; every other event stays."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime

from fastapi.testclient import TestClient
from sqlalchemy import func, inspect, select

from gateway.db.engine import transaction
from gateway.db.migrate import upgrade_database
from gateway.db.models import Attempt, Event
from gateway.domain.states import AttemptState
from gateway.repositories.jobs.predictions import Announcement, announce
from gateway.runtime import Runtime
from gateway.schemas.events import JOB_PREDICTION_TYPE
from tests.conftest import MakeUser
from tests.db.test_migration_0012 import _down_to

START = datetime(2030, 1, 1, 12, tzinfo=UTC)


def test_down_and_up_keeps_attempts_and_other_events(client: TestClient, runtime: Runtime,
                                                     make_user: MakeUser) -> None:
    user = make_user()
    job = client.post("/api/v1/jobs", headers=user.headers,
                      json={"name": "j", "executable": "true", "site": "local"}).json()
    with transaction(runtime.sessions) as session:
        attempt = Attempt(job_id=job["id"], number=1, site_name="local", tag="gw-m",
                          native_id="7", state=AttemptState.QUEUED, workdir="/tmp/m")
        session.add(attempt)
        session.flush()
        announce(session, [Announcement(attempt.id, job["id"], "local", START, None,
                                        "scheduler")], START, "worker")
    with runtime.sessions() as session:
        others = session.scalar(select(func.count()).select_from(Event).where(
            Event.type != JOB_PREDICTION_TYPE))
    assert others

    below = importlib.import_module("gateway.db.migrations.versions.0020_predicted_start")
    _down_to(runtime, below.down_revision)
    inspector = inspect(runtime.engine)
    assert "predicted_start" not in {c["name"] for c in inspector.get_columns("attempts")}
    upgrade_database(runtime.engine)

    with runtime.sessions() as session:
        kept = session.scalars(select(Attempt).where(Attempt.job_id == job["id"])).one()
        assert (kept.native_id, kept.predicted_start) == ("7", None)
        assert session.scalar(select(func.count()).select_from(Event).where(
            Event.type == JOB_PREDICTION_TYPE)) == 0
        assert session.scalar(select(func.count()).select_from(Event)) == others
    assert client.get(f"/api/v1/jobs/{job['id']}", headers=user.headers).status_code == 200
