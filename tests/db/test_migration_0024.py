"""Migration 0024 (origin documents: TES tasks as sent) goes down and up again with a
task in the database, on SQLite and PostgreSQL: down, the table goes and the task reads
back from its job spec; up again, the table is there, empty, and the task still reads."""

from __future__ import annotations

import importlib

from fastapi.testclient import TestClient
from sqlalchemy import func, inspect, select

from gateway.db.migrate import upgrade_database
from gateway.db.origin_models import OriginDocument
from gateway.runtime import Runtime
from tests.api.test_container_jobs import offer
from tests.conftest import MakeUser
from tests.db.test_migration_0012 import _down_to

TES = "/ga4gh/tes/v1"


def test_down_and_up_keeps_the_tasks(client: TestClient, runtime: Runtime,
                                     make_user: MakeUser) -> None:
    offer(runtime, "local")
    user = make_user()
    task = client.post(f"{TES}/tasks", headers=user.headers, json={
        "description": "kept", "executors": [{"image": "alpine:3.20", "command": ["true"]}]})
    task_id = task.json()["id"]
    assert client.get(f"{TES}/tasks/{task_id}?view=BASIC",
                      headers=user.headers).json()["description"] == "kept"

    below = importlib.import_module("gateway.db.migrations.versions.0024_origin_documents")
    _down_to(runtime, below.down_revision)
    assert "origin_documents" not in inspect(runtime.engine).get_table_names()
    upgrade_database(runtime.engine)

    with runtime.sessions() as session:
        assert session.scalar(select(func.count()).select_from(OriginDocument)) == 0
    basic = client.get(f"{TES}/tasks/{task_id}?view=BASIC", headers=user.headers).json()
    assert basic["executors"][0]["command"] == ["true"] and "description" not in basic
