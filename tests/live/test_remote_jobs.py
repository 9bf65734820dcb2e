"""Jobs through the REST API on the live testbed: real Slurm (with slurmdbd) and real
Grid Engine behind real sshd, reached over the pinned, pooled SSH transport."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gateway.api.app import create_app
from gateway.runtime import Runtime, build_runtime
from gateway.settings import Settings
from gateway.testbed.state import TestbedInfo
from gateway.worker.loop import Worker
from tests.conftest import ALL_SCOPES

# Community-account sites; parnass2 (mapped accounts) is not driven by the gateway yet.
SITES = ("roadrunner", "galaxy")


@pytest.fixture(scope="module")
def remote(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory
           ) -> Iterator[tuple[Runtime, TestClient]]:
    base = tmp_path_factory.mktemp("remote")
    configs = base / "site-configs"
    configs.mkdir()
    for name in SITES:
        shutil.copy(Path(testbed.site_configs) / f"{name}.yaml", configs)
    settings = Settings(data_dir=base / "data", database_url=f"sqlite:///{base / 'gw.db'}",
                        site_configs_dir=configs, run_worker=False,
                        public_url="http://gateway.test")
    runtime = build_runtime(settings)
    with TestClient(create_app(runtime=runtime)) as client:
        yield runtime, client
    runtime.close()


def _token(runtime: Runtime) -> dict[str, str]:
    from gateway.auth.tokens import issue_access_token
    from gateway.db.engine import transaction
    from gateway.services.accounts import create_local_user

    with transaction(runtime.sessions) as session:
        user = create_local_user(session, f"live{time.monotonic_ns() % 10**8}",
                                 "correct horse battery")
        user_id, name = user.id, user.username
    token = issue_access_token(runtime.settings, runtime.keys, subject=user_id,
                               client_id="tests", scope=ALL_SCOPES, username=name).token
    return {"Authorization": f"Bearer {token}"}


def _until_final(runtime: Runtime, client: TestClient, headers: dict[str, str], job_id: str,
                 deadline: float = 120) -> dict[str, Any]:
    worker = Worker(runtime)
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        worker.run_once()
        job: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}", headers=headers).json()
        if job["state"] in ("COMPLETED", "FAILED", "CANCELLED"):
            return job
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} did not finish: {job}")


@pytest.mark.parametrize("site", SITES)
def test_job_runs_on_a_real_scheduler(remote: tuple[Runtime, TestClient], site: str,
                                      tmp_path: Path) -> None:
    runtime, client = remote
    headers = _token(runtime)
    nasty = "x; touch /tmp/pwned-remote $(id)\nsecond"
    r = client.post("/api/v1/jobs", headers=headers, json={
        "name": nasty, "site": site, "executable": "/bin/sh",
        "args": ["-c", 'printf "%s|%s" "$1" "$V"', "sh", nasty],
        "environment": {"V": nasty}, "resources": {"walltime": 120}})
    assert r.status_code == 202, r.text
    job = _until_final(runtime, client, headers, r.json()["id"])
    assert job["state"] == "COMPLETED", job
    attempt = job["attempts"][0]
    assert attempt["native_id"] and attempt["site"] == site
    out = client.get(f"/api/v1/jobs/{job['id']}/output/stdout", headers=headers)
    assert out.status_code == 200 and out.text == f"{nasty}|{nasty}"
    assert not Path("/tmp/pwned-remote").exists()
    sites = {s["name"]: s for s in client.get("/api/v1/sites", headers=headers).json()["items"]}
    assert sites[site]["status"] == "up"


@pytest.mark.parametrize("site", SITES)
def test_failing_job_keeps_its_exit_code(remote: tuple[Runtime, TestClient], site: str
                                         ) -> None:
    runtime, client = remote
    headers = _token(runtime)
    r = client.post("/api/v1/jobs", headers=headers, json={
        "name": "exit 3", "site": site, "executable": "/bin/sh", "args": ["-c", "exit 3"],
        "resources": {"walltime": 120}})
    assert r.status_code == 202, r.text
    job = _until_final(runtime, client, headers, r.json()["id"])
    assert job["state"] == "FAILED" and job["exit_code"] == 3, job
