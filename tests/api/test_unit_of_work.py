"""One unit of work per writing request, committed before the answer is built.

The database itself refuses the COMMIT here (a check deferred to commit time: a deferred
constraint trigger on PostgreSQL, a deferred foreign key on SQLite), after every
statement of the request succeeded. The answer must be an error (5xx problem document),
never the 2xx of a row that was not stored, and the row must be absent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, func, select, text

from gateway.api.app import create_app
from gateway.db.engine import is_postgres
from gateway.db.models import Job, Upload
from gateway.runtime import Runtime
from tests.conftest import LOOPBACK, MakeUser

JOB = {"name": "hello", "executable": "/bin/echo", "args": ["hi"], "labels": {"exp": "a"}}


def _refuse_commit_after_insert(runtime: Runtime, table: str) -> None:
    """From now on, a transaction that inserts into `table` fails at COMMIT."""
    engine = runtime.engine
    with engine.begin() as conn:
        if is_postgres(engine):
            conn.execute(text(
                "CREATE FUNCTION refuse_commit() RETURNS trigger LANGUAGE plpgsql AS "
                "$$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$"))
            conn.execute(text(
                f"CREATE CONSTRAINT TRIGGER refuse_commit AFTER INSERT ON {table} "
                "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION refuse_commit()"))
            return
        # A label of a job that does not exist: with foreign keys deferred, SQLite
        # checks it only when the transaction commits.
        conn.execute(text(
            f"CREATE TRIGGER refuse_commit AFTER INSERT ON {table} BEGIN "
            "INSERT INTO job_labels (job_id, key, value) VALUES ('no-such-job', 'k', 'v'); "
            "END"))

    @event.listens_for(engine, "begin")
    def _defer_foreign_keys(conn: Any) -> None:
        conn.exec_driver_sql("PRAGMA defer_foreign_keys=ON")


@pytest.fixture
def failing_client(runtime: Runtime) -> Iterator[TestClient]:
    """The app answering as it would a real client: exceptions become 5xx answers."""
    with TestClient(create_app(runtime=runtime), client=LOOPBACK,
                    raise_server_exceptions=False) as c:
        yield c


def _count(runtime: Runtime, model: type[Job] | type[Upload]) -> int:
    with runtime.engine.connect() as conn:
        return int(conn.scalar(select(func.count()).select_from(model)) or 0)


def test_submit_whose_commit_fails_is_an_error_and_stores_nothing(
        runtime: Runtime, failing_client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    _refuse_commit_after_insert(runtime, "jobs")
    response = failing_client.post("/api/v1/jobs", json=JOB, headers=user.headers)
    assert response.status_code >= 500, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert _count(runtime, Job) == 0
    listed = failing_client.get("/api/v1/jobs", headers=user.headers)
    assert listed.status_code == 200
    assert listed.json()["items"] == []


def test_upload_whose_commit_fails_is_an_error_and_stores_nothing(
        runtime: Runtime, failing_client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    _refuse_commit_after_insert(runtime, "uploads")
    response = failing_client.post("/api/v1/uploads", json={"name": "a.txt", "size": 3},
                                   headers=user.headers)
    assert response.status_code >= 500, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    assert _count(runtime, Upload) == 0
    assert failing_client.get("/api/v1/uploads", headers=user.headers).json()["items"] == []


def test_the_same_submit_commits_without_the_refusal(
        runtime: Runtime, failing_client: TestClient, make_user: MakeUser) -> None:
    """The control: the request above is a good one; only the commit made it fail."""
    user = make_user()
    response = failing_client.post("/api/v1/jobs", json=JOB, headers=user.headers)
    assert response.status_code == 202, response.text
    assert _count(runtime, Job) == 1
