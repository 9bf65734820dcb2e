"""A gateway with no SMTP relay sends no mail, and says so to a job asking for it."""

from __future__ import annotations

import sys

from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.worker.test_worker_local import post, run_until


def test_no_relay_refuses_mail_and_takes_the_rest(client: TestClient, runtime: Runtime,
                                                  make_user: MakeUser) -> None:
    assert runtime.settings.smtp_host is None
    user = make_user()
    spec = {"name": "x", "executable": sys.executable, "args": ["-c", "pass"]}
    r = client.post("/api/v1/jobs", headers=user.headers,
                    json={**spec, "notify": {"mail": ["end"]}})
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith("This gateway sends no mail")
    assert r.json()["field"] == "notify.mail"
    # Asking for no mail (an empty list) is no request: taken, and the worker runs it.
    job_id = post(client, user.headers, {**spec, "notify": {"mail": []}})
    assert run_until(Worker(runtime), client, user.headers, job_id,
                     {"COMPLETED", "FAILED"})["state"] == "COMPLETED"


def test_a_workflow_step_asking_for_mail_is_refused_too(client: TestClient,
                                                        make_user: MakeUser) -> None:
    user = make_user()
    job = {"executable": sys.executable, "args": ["-c", "pass"], "notify": {"mail": ["end"]}}
    r = client.post("/api/v1/workflows", headers=user.headers,
                    json={"name": "wf", "steps": {"a": {"job": job}}})
    assert r.status_code == 422, r.text
    assert r.json()["detail"].startswith("This gateway sends no mail")
    assert client.get("/api/v1/workflows", headers=user.headers).json()["items"] == []
