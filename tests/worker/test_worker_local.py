"""The worker drives real local jobs through their whole life (SQLite and PostgreSQL)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.waiting_jobs import waits

PY = sys.executable


def run_until(worker: Worker, client: TestClient, headers: dict[str, str], job_id: str,
              states: set[str], deadline: float = 60) -> dict[str, Any]:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        worker.run_once()
        job: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}", headers=headers).json()
        if job["state"] in states:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not reach {states}: {job}")


def post(client: TestClient, headers: dict[str, str], spec: dict[str, Any]) -> str:
    r = client.post("/api/v1/jobs", json=spec, headers=headers)
    assert r.status_code == 202, r.text
    job_id: str = r.json()["id"]
    return job_id


def test_job_completes_with_output_and_events(client: TestClient, runtime: Runtime,
                                              make_user: MakeUser) -> None:
    user = make_user()
    job_id = post(client, user.headers, {
        "name": "hello", "executable": PY,
        "args": ["-c", "import sys; print('out'); print('err', file=sys.stderr)"]})
    job = run_until(Worker(runtime), client, user.headers, job_id, {"COMPLETED", "FAILED"})
    assert job["state"] == "COMPLETED" and job["exit_code"] == 0, job
    assert job["attempts"][0]["native_id"] and job["attempts"][0]["state"] == "COMPLETED"
    out = client.get(f"/api/v1/jobs/{job_id}/logs/stdout", headers=user.headers)
    assert out.text == "out\n" and out.headers["x-output-size"] == "4"
    err = client.get(f"/api/v1/jobs/{job_id}/logs/stderr", params={"tail": 2},
                     headers=user.headers)
    assert err.text == "r\n"
    followed = client.get(f"/api/v1/jobs/{job_id}/logs/stdout", params={"follow": True},
                          headers=user.headers)
    assert followed.text == "out\n"
    history = client.get(f"/api/v1/jobs/{job_id}/events", headers=user.headers).json()["items"]
    # The routing decision is an event that changes no state; the rest are state changes.
    routed = [e for e in history if e["from_state"] == e["to_state"]]
    assert [(e["to_state"], e["reason"].startswith("Site 'local'")) for e in routed] == [
        ("ACCEPTED", True)]
    states = [e["to_state"] for e in history if e["from_state"] != e["to_state"]]
    assert states[:3] == ["ACCEPTED", "STAGING_IN", "QUEUED"] and states[-1] == "COMPLETED"
    assert len(states) == len(set(states)), "every state at most once"


def test_failing_job_keeps_exit_code(client: TestClient, runtime: Runtime,
                                     make_user: MakeUser) -> None:
    user = make_user()
    job_id = post(client, user.headers, {"name": "bad", "executable": PY,
                                         "args": ["-c", "raise SystemExit(7)"]})
    job = run_until(Worker(runtime), client, user.headers, job_id, {"COMPLETED", "FAILED"})
    assert job["state"] == "FAILED" and job["exit_code"] == 7


def test_walltime_is_enforced(client: TestClient, runtime: Runtime, make_user: MakeUser
                              ) -> None:
    user = make_user()
    job_id = post(client, user.headers, {"name": "slow", "executable": "/bin/sh",
                                         "args": ["-c", waits()], "resources": {"walltime": 1}})
    job = run_until(Worker(runtime), client, user.headers, job_id, {"COMPLETED", "FAILED"})
    assert job["state"] == "FAILED" and job["reason"] == "TIMEOUT"


def test_cancel_running_job(client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    worker = Worker(runtime)
    job_id = post(client, user.headers, {"name": "long", "executable": "/bin/sh",
                                         "args": ["-c", waits()]})
    run_until(worker, client, user.headers, job_id, {"RUNNING"})
    r = client.post(f"/api/v1/jobs/{job_id}/cancel", headers=user.headers)
    assert r.status_code == 202 and r.json()["cancel_requested"]
    job = run_until(worker, client, user.headers, job_id, {"CANCELLED", "FAILED", "COMPLETED"})
    assert job["state"] == "CANCELLED", job


def test_user_text_never_reaches_a_shell(client: TestClient, runtime: Runtime,
                                         make_user: MakeUser, tmp_path: Path) -> None:
    user = make_user()
    pwned = tmp_path / "pwned"
    nasty = f"x; touch {pwned} $(id)\nsecond line `touch {pwned}`"
    job_id = post(client, user.headers, {
        "name": nasty, "executable": PY,
        "args": ["-c", "import json, os, sys; print(json.dumps([sys.argv[1:], os.environ['V']]))",
                 nasty, "'$V'"],
        "environment": {"V": nasty}})
    job = run_until(Worker(runtime), client, user.headers, job_id, {"COMPLETED", "FAILED"})
    assert job["state"] == "COMPLETED", job
    assert job["name"] == nasty
    out = client.get(f"/api/v1/jobs/{job_id}/logs/stdout", headers=user.headers).json()
    assert out == [[nasty, "'$V'"], nasty]
    assert not pwned.exists()
