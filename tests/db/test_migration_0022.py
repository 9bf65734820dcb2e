"""Migration 0022 (jobs' origin) goes down and up again with jobs of both doors in the
database, on SQLite and PostgreSQL (plain ALTER TABLE on both: `jobs` is never rebuilt,
so its events, attempts and labels stay): down, the column and its index go; up again,
every job is the gateway's own (NULL), and nothing else changed."""

from __future__ import annotations

import importlib

from fastapi.testclient import TestClient
from sqlalchemy import func, inspect, select

from gateway.db.migrate import upgrade_database
from gateway.db.models import Event, Job
from gateway.runtime import Runtime
from tests.api.test_container_jobs import offer
from tests.conftest import MakeUser
from tests.db.test_migration_0012 import _down_to


def test_down_and_up_keeps_the_jobs(client: TestClient, runtime: Runtime,
                                    make_user: MakeUser) -> None:
    offer(runtime, "local")
    user = make_user()
    native = client.post("/api/v1/jobs", headers=user.headers,
                         json={"name": "j", "executable": "true", "site": "local"}).json()
    task = client.post("/ga4gh/tes/v1/tasks", headers=user.headers, json={
        "executors": [{"image": "alpine:3.20", "command": ["true"]}],
        "resources": {"backend_parameters": {"site": "local"}}}).json()
    with runtime.sessions() as session:
        events = session.scalar(select(func.count()).select_from(Event))
        assert session.get(Job, task["id"]).origin == "tes"  # type: ignore[union-attr]

    below = importlib.import_module("gateway.db.migrations.versions.0022_job_origin")
    _down_to(runtime, below.down_revision)
    inspector = inspect(runtime.engine)
    assert "origin" not in {c["name"] for c in inspector.get_columns("jobs")}
    assert "ix_jobs_owner_origin_created" not in {i["name"] for i in inspector.get_indexes("jobs")}
    upgrade_database(runtime.engine)

    with runtime.sessions() as session:
        origins = {job_id: origin for job_id, origin in session.execute(select(Job.id, Job.origin))}
        assert origins == {native["id"]: None, task["id"]: None}
        assert session.scalar(select(func.count()).select_from(Event)) == events
    for job_id in (native["id"], task["id"]):
        shown = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()
        assert shown["origin"] == "api"
