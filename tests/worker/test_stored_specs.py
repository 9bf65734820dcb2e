"""Specs stored under older, looser rules: the worker neither submits one the rules now
refuse nor gets stuck on it (it would fail the same claim on every pass), and it still
collects the outputs of a job already submitted (SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from gateway.db.engine import transaction
from gateway.db.models import Attempt, Job
from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.worker.test_worker_local import post, run_until


def _rewrite_spec(runtime: Runtime, job_id: str, **changes: Any) -> None:
    """What a spec accepted before a rule tightened looks like in the database."""
    with transaction(runtime.sessions) as session:
        job = session.get(Job, job_id)
        assert job is not None
        job.spec = {**job.spec, **changes}


def test_an_accepted_spec_the_rules_now_refuse_fails_with_the_reason(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    job_id = post(client, user.headers, {"name": "old", "script": "#!/bin/sh\nhostname\n"})
    _rewrite_spec(runtime, job_id, script="#!/bin/sh\n#SBATCH --account=other\nhostname\n")
    Worker(runtime).run_once()
    job = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()
    assert job["state"] == "FAILED", job
    assert "no longer accepted" in job["reason"]
    assert "script line 2 '#SBATCH --account=other'" in job["reason"]
    assert job["attempts"] == []


def test_an_accepted_environment_the_rules_now_refuse_never_reaches_the_site(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    # Issue 25 item 3: accepted before the rule looked behind the runtimes' prefixes; the
    # claim refuses it (and the adapters would: tests/adapters/test_env_rules.py).
    user = make_user()
    job_id = post(client, user.headers, {"name": "old", "executable": "/bin/true"})
    _rewrite_spec(runtime, job_id, environment={"APPTAINERENV_LD_PRELOAD": "/tmp/x.so"})
    job = run_until(Worker(runtime), client, user.headers, job_id, {"FAILED", "COMPLETED"})
    assert job["state"] == "FAILED", job
    assert "'APPTAINERENV_LD_PRELOAD' is not allowed: a container runtime sets it as " \
           "LD_PRELOAD" in job["reason"], job["reason"]


def test_a_submitted_job_is_collected_though_its_spec_predates_a_rule(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    # The job waits for a file the test creates, so its spec changes while it runs.
    job_id = post(client, user.headers, {
        "name": "runs", "outputs": ["a.txt"], "resources": {"walltime": 60},
        "script": "#!/bin/sh\nwhile [ ! -e go ]; do sleep 0.1; done\necho hi > a.txt\n"})
    worker = Worker(runtime)
    run_until(worker, client, user.headers, job_id, {"QUEUED", "RUNNING"})
    _rewrite_spec(runtime, job_id, outputs=["a.txt", "~/notes"],
                  script="#!/bin/sh\n#SBATCH --gres=gpu:1\necho hi > a.txt\n",
                  environment={"APPTAINERENV_LD_PRELOAD": "/tmp/x.so"})
    with runtime.sessions() as session:
        workdir = session.query(Attempt.workdir).filter(Attempt.job_id == job_id).scalar()
    (Path(workdir) / "go").touch()
    job = run_until(worker, client, user.headers, job_id, {"COMPLETED", "FAILED"})
    assert job["state"] == "COMPLETED", job
    files = client.get(f"/api/v1/jobs/{job_id}/outputs", headers=user.headers).json()
    assert [f["path"] for f in files["items"]] == ["a.txt"]
