"""Migration 0013 (job arrays and dependencies) goes down to 0012 and up again with an
array and a dependent job in the database, on SQLite (plain ALTER TABLE: no rebuild of
the jobs table others refer to) and PostgreSQL; the jobs stay, as plain jobs."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import inspect

from gateway.db.migrate import upgrade_database
from gateway.runtime import Runtime
from tests.conftest import MakeUser
from tests.db.test_migration_0012 import _down_to
from tests.worker.test_dependencies import after, sh


def test_down_and_up_keeps_the_jobs(client: TestClient, runtime: Runtime,
                                    make_user: MakeUser) -> None:
    user = make_user()
    first = client.post("/api/v1/jobs", headers=user.headers,
                        json=sh("sweep", "true", array="0-2%1")).json()
    dependent = client.post("/api/v1/jobs", headers=user.headers, json=sh(
        "after", "true", depends_on=after("afterok", first["array_job_id"]))).json()

    _down_to(runtime, "0012")
    tables = set(inspect(runtime.engine).get_table_names())
    assert not {"job_arrays", "job_dependencies"} & tables
    upgrade_database(runtime.engine)

    for job_id in (first["id"], dependent["id"]):
        job = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()
        assert (job["state"], job["array_job_id"], job["array_index"]) == (
            "ACCEPTED", None, None)
    assert client.get("/api/v1/job-arrays", headers=user.headers).json()["items"] == []
