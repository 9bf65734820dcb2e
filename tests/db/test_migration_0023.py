"""Migration 0023 (attempts' step exit codes) goes down and up again with attempts in the
database, on SQLite and PostgreSQL (plain ALTER TABLE: `attempts` is never rebuilt): down,
the column goes; up again, every attempt has none (one program), and nothing else
changed."""

from __future__ import annotations

import importlib

from fastapi.testclient import TestClient
from sqlalchemy import inspect, select, update

from gateway.db.migrate import upgrade_database
from gateway.db.models import Attempt
from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.db.test_migration_0012 import _down_to
from tests.worker.test_worker_local import post, run_until


def test_down_and_up_keeps_the_attempts(client: TestClient, runtime: Runtime,
                                        make_user: MakeUser) -> None:
    user = make_user()
    job_id = post(client, user.headers, {"name": "j", "executable": "true", "site": "local"})
    run_until(Worker(runtime), client, user.headers, job_id, {"COMPLETED"})
    with runtime.sessions() as session, session.begin():
        session.execute(update(Attempt).values(step_exit_codes="0,3"))
    before = _rows(runtime)

    below = importlib.import_module("gateway.db.migrations.versions.0023_step_exit_codes")
    _down_to(runtime, below.down_revision)
    assert "step_exit_codes" not in {c["name"] for c in
                                     inspect(runtime.engine).get_columns("attempts")}
    upgrade_database(runtime.engine)

    after = _rows(runtime)
    assert [row[:-1] for row in after] == [row[:-1] for row in before]
    assert [row[-1] for row in after] == [None]


def _rows(runtime: Runtime) -> list[tuple[object, ...]]:
    with runtime.sessions() as session:
        return [tuple(row) for row in session.execute(select(
            Attempt.id, Attempt.job_id, Attempt.state, Attempt.exit_code,
            Attempt.step_exit_codes).order_by(Attempt.id))]
