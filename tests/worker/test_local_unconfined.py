"""Without a sandbox (forced here by the setting) the local site runs jobs as the
gateway's own account, so it serves only that account and says so."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.settings import Settings
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.worker.test_local_isolation import sites
from tests.worker.test_worker_local import run_until

GATEWAY_ACCOUNT = pwd.getpwuid(os.geteuid()).pw_name


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    """The shared fixture's settings, with local isolation turned off."""
    return Settings(data_dir=tmp_path / "data", database_url=database_url, run_worker=False,
                    public_url="http://gateway.test", local_isolation="none")


def test_without_isolation_only_the_gateways_account_uses_local(
    client: TestClient, runtime: Runtime, make_user: MakeUser
) -> None:
    other, owner = make_user("someone-else"), make_user(GATEWAY_ACCOUNT)
    assert sites(client, other.headers)["local"]["isolation"] == "none"

    spec = {"name": "t", "executable": "/bin/true", "site": "local"}
    refused = client.post("/api/v1/jobs", json=spec, headers=other.headers)
    assert refused.status_code == 422, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    detail = refused.json()["detail"]
    assert "unconfined" in detail and f"'{GATEWAY_ACCOUNT}'" in detail and "bwrap" in detail

    auto = client.post("/api/v1/jobs", json={**spec, "site": "auto"}, headers=other.headers)
    assert auto.status_code == 422 and "no account for you" in auto.json()["detail"], auto.text

    mine = client.post("/api/v1/jobs", json=spec, headers=owner.headers)
    assert mine.status_code == 202, mine.text
    job = run_until(Worker(runtime), client, owner.headers, mine.json()["id"],
                    {"COMPLETED", "FAILED"})
    assert job["state"] == "COMPLETED"
