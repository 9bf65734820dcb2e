"""kill -9 the gateway (API and worker in one process) in the middle of a workflow, twice;
each restart continues from the database alone and the workflow finishes with every
step run exactly once (a side-effect counter in each job's directory, as in
test_crash_recovery), none forgotten, none retried (SQLite and PostgreSQL)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func, select

from adapters.local.files import JobFiles
from gateway.db.models import Attempt
from gateway.runtime import Runtime
from gateway.settings import Settings
from tests.conftest import MakeUser
from tests.waiting_jobs import let_all_go, let_jobs_go
from tests.worker.gateway_process import GatewayProcess, free_port
from tests.worker.test_crash_recovery import JOB_SCRIPT, env_for
from tests.worker.test_crash_recovery import wait_for as crash_wait_for

LAST: list[Any] = []  # the steps as last seen, for a timeout's message

# Every step records its run, then keeps running until the test lets it go.
STEP_JOB = {"executable": "/bin/sh", "args": ["-c", JOB_SCRIPT], "site": "local",
            "outputs": ["executions"]}
SWEEP = [f"sweep[{i}]" for i in range(6)]
SPEC = {"name": "crash", "steps": {
    "first": {"job": STEP_JOB},
    "sweep": {"needs": ["first"], "matrix": {"i": [0, 1, 2, 3, 4, 5]},
              "job": {**STEP_JOB, "name": "sweep-${{ matrix.i }}"}},
    "last": {"inputs": [{"from": "sweep[*]:outputs/executions", "dest": "seen"}],
             "job": STEP_JOB},
}}


def workflow(client: httpx.Client, workflow_id: str) -> dict[str, Any]:
    r = client.get(f"/api/v1/workflows/{workflow_id}")
    assert r.status_code == 200, r.text
    found: dict[str, Any] = r.json()
    LAST[:] = [(s["instance"], s["state"], s["job_state"], s["reason"]) for s in found["steps"]]
    return found


def wait_for(predicate, what: str, deadline: float = 180) -> None:  # type: ignore[no-untyped-def]
    try:
        crash_wait_for(predicate, what, deadline)
    except AssertionError:
        raise AssertionError(f"{what}: {LAST}") from None


def count(found: dict[str, Any], state: str) -> int:
    return sum(s["state"] == state for s in found["steps"])


def test_kill9_mid_workflow_runs_each_step_once(settings: Settings, runtime: Runtime,
                                                make_user: MakeUser, tmp_path: Path) -> None:
    user = make_user()
    # A short staging lease: a step killed while its inputs are staged is taken over soon.
    gateway = GatewayProcess(env_for(settings, GRIDGATE_PORT=str(free_port()),
                                     GRIDGATE_STAGING_LEASE_SECONDS="4"),
                             tmp_path / "gateway.log")
    gateway.start()
    try:
        with httpx.Client(base_url=gateway.url, headers=user.headers, timeout=30) as client:
            r = client.post("/api/v1/workflows", json=SPEC)
            assert r.status_code == 202, r.text
            wf_id = r.json()["id"]
            step_jobs = {s["instance"]: s["job_id"] for s in r.json()["steps"]}

            def sweep_running() -> bool:
                let_jobs_go(runtime, step_jobs["first"])
                found = workflow(client, wf_id)
                return count(found, "completed") == 1 and sum(
                    s["job_state"] == "RUNNING" for s in found["steps"]) == len(SWEEP)

            # First kill: the first step has ended, the whole sweep runs (waiting).
            wait_for(sweep_running, "the sweep running")
            gateway.kill9()
            # Half the sweep ends while the gateway is down.
            ended = let_jobs_go(runtime, *(step_jobs[i] for i in SWEEP[:3]))
            assert len(ended) == 3
            wait_for(lambda: all(JobFiles(w).result.exists() for w in ended),
                     "3 steps ended while the gateway was down")
            gateway.start()

            def last_opened() -> bool:
                let_jobs_go(runtime, *(step_jobs[i] for i in SWEEP))
                return workflow(client, wf_id)["steps"][-1]["state"] == "running"

            # Second kill: while the gather step is open or running (waiting, it stays so).
            wait_for(last_opened, "the last step opened")
            gateway.kill9()
            gateway.start()

            def ended_all() -> bool:
                let_all_go(runtime.settings.jobs_dir)
                return workflow(client, wf_id)["state"] != "running"

            # A kill while a cache entry is being sent leaves the site's lock on it; the
            # restarted gateway sees its holder gone and breaks it at once
            # (adapters.transfer.site_lock), with no wait for the lock to go stale.
            wait_for(ended_all, "the end", deadline=180)
            done = workflow(client, wf_id)
            assert done["state"] == "completed", [(s["instance"], s["state"], s["reason"])
                                                  for s in done["steps"]]
            assert all(s["retries"] == 0 for s in done["steps"])
            last = done["steps"][-1]["job_id"]
            gathered = client.get(f"/api/v1/jobs/{last}/outputs/executions").text
    finally:
        gateway.stop()
        let_all_go(runtime.settings.jobs_dir)  # none left waiting if the test failed
    job_ids = {s["job_id"] for s in done["steps"]}
    lines = [line for ledger in sorted(runtime.settings.jobs_dir.glob("*/executions"))
             for line in ledger.read_text().split()]
    assert len(lines) == 8 and len(set(lines)) == 8, lines
    assert len(gathered.split()) == 1  # its own run only: the inputs went to seen/
    with runtime.sessions() as session:
        per_job = dict(session.execute(select(Attempt.job_id, func.count())
                                       .group_by(Attempt.job_id)).all())
    assert set(per_job) == job_ids and set(per_job.values()) == {1}, per_job
