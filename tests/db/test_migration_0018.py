"""Migration 0018 (job mail) goes down and up again with users and jobs in the database,
on SQLite (plain ALTER TABLE: no rebuild of the users table others refer to) and
PostgreSQL."""

from __future__ import annotations

import importlib

from fastapi.testclient import TestClient
from sqlalchemy import inspect

from gateway.db.migrate import upgrade_database
from gateway.runtime import Runtime
from tests.conftest import MakeUser
from tests.db.test_migration_0012 import _down_to

MAIL_TABLES = {"mail_requests", "mail_sent", "mail_cursor"}


def test_down_and_up_keeps_users_and_jobs(client: TestClient, runtime: Runtime,
                                          make_user: MakeUser) -> None:
    user = make_user()
    job = client.post("/api/v1/jobs", headers=user.headers,
                      json={"name": "j", "executable": "true"}).json()
    below = importlib.import_module("gateway.db.migrations.versions.0018_user_email")
    _down_to(runtime, below.down_revision)
    inspector = inspect(runtime.engine)
    assert not MAIL_TABLES & set(inspector.get_table_names())
    assert "email" not in {c["name"] for c in inspector.get_columns("users")}
    upgrade_database(runtime.engine)
    assert set(inspect(runtime.engine).get_table_names()) >= MAIL_TABLES
    assert client.get(f"/api/v1/jobs/{job['id']}", headers=user.headers).status_code == 200
