"""Migration 0012 renames columns (one name per idea): down to 0011 and up again keeps
every value, on SQLite (ALTER TABLE ... RENAME COLUMN, no table rebuild) and PostgreSQL."""

from __future__ import annotations

from alembic import command
from fastapi.testclient import TestClient

from gateway.db.engine import is_postgres
from gateway.db.migrate import alembic_config, upgrade_database
from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.worker.test_worker_local import post, run_until


def _down_to(runtime: Runtime, revision: str) -> None:
    cfg = alembic_config(runtime.engine)
    if is_postgres(runtime.engine):
        with runtime.engine.connect() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, revision)
            conn.commit()
    else:
        command.downgrade(cfg, revision)


def test_renamed_columns_keep_their_values(client: TestClient, runtime: Runtime,
                                           make_user: MakeUser) -> None:
    user = make_user()
    job_id = post(client, user.headers, {"name": "fails", "site": "local",
                                         "executable": "/bin/sh", "args": ["-c", "exit 3"]})
    before = run_until(Worker(runtime), client, user.headers, job_id, {"FAILED"})
    sites_before = client.get("/api/v1/sites", headers=user.headers).json()["items"]
    assert before["reason"] and before["ended_at"]

    _down_to(runtime, "0011")
    upgrade_database(runtime.engine)

    after = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()
    assert (after["reason"], after["ended_at"]) == (before["reason"], before["ended_at"])
    sites_after = client.get("/api/v1/sites", headers=user.headers).json()["items"]
    assert [(s["name"], s["state"], s["reason"]) for s in sites_after] == [
        (s["name"], s["state"], s["reason"]) for s in sites_before]
