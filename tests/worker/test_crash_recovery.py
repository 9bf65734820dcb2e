"""kill -9 the gateway mid-flight; the restart must finish every job exactly once.

And: two workers against one PostgreSQL submit each of 200 jobs exactly once.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from adapters.local.files import JobFiles
from gateway.db.models import Attempt, Event
from gateway.runtime import Runtime
from gateway.settings import Settings
from tests.conftest import MakeUser
from tests.waiting_jobs import WAIT, let_all_go, let_go, local_job_dirs
from tests.worker.gateway_process import GatewayProcess, free_port

# The job appends its tag to a file in its directory (the only place a sandboxed job
# can write); a second run in the same directory would add a line.
RECORD = 'echo "$GRIDGATE_JOB_TAG" >> "$GRIDGATE_WORKDIR/executions"'
# ... and then keeps running until the test lets it go (tests/waiting_jobs.py).
JOB_SCRIPT = f"{RECORD}; {WAIT}"


def job_spec(i: int, script: str = JOB_SCRIPT) -> dict[str, object]:
    return {"name": f"crash-{i}", "executable": "/bin/sh", "args": ["-c", script]}


def env_for(settings: Settings, **extra: str) -> dict[str, str]:
    env = {
        "GRIDGATE_DATA_DIR": str(settings.data_dir),
        "GRIDGATE_DATABASE_URL": settings.resolved_database_url,
        "GRIDGATE_PUBLIC_URL": settings.public_url,
        "GRIDGATE_WORKER_POLL_SECONDS": "0.2",
        "GRIDGATE_SUBMIT_LEASE_SECONDS": "3",
    }
    env.update(extra)
    return env


def states(client: httpx.Client) -> Counter[str]:
    counts: Counter[str] = Counter()
    cursor = None
    while True:
        params: dict[str, str | int] = {"limit": 500}
        if cursor:
            params["cursor"] = cursor
        page = client.get("/api/v1/jobs", params=params).json()
        counts.update(j["state"] for j in page["items"])
        cursor = page["next_cursor"]
        if not cursor:
            return counts


def wait_for(predicate, what: str, deadline: float = 180) -> None:  # type: ignore[no-untyped-def]
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.25)
    raise AssertionError(f"timed out waiting for {what}")


def assert_exactly_once(runtime: Runtime, n: int) -> None:
    jobs_dir = runtime.settings.jobs_dir
    lines = [line for ledger in sorted(jobs_dir.glob("*/executions"))
             for line in ledger.read_text().split()]
    assert len(lines) == n and len(set(lines)) == n, Counter(lines).most_common(3)
    assert_one_attempt_each(runtime, n)


def assert_one_attempt_each(runtime: Runtime, n: int) -> None:
    """`n` jobs, each with one attempt and one COMPLETED event."""
    with runtime.sessions() as session:
        per_job = session.execute(select(Attempt.job_id, func.count())
                                  .group_by(Attempt.job_id)).all()
        assert len(per_job) == n and all(count == 1 for _, count in per_job)
        finals = session.execute(select(Event.job_id, func.count())
                                 .where(Event.to_state == "COMPLETED")
                                 .group_by(Event.job_id)).all()
        assert len(finals) == n and all(count == 1 for _, count in finals)


def test_kill9_gateway_with_running_and_accepted_jobs(
    settings: Settings, runtime: Runtime, make_user: MakeUser, tmp_path: Path
) -> None:
    user = make_user()
    port = free_port()
    gateway = GatewayProcess(env_for(settings, GRIDGATE_PORT=str(port),
                                     GRIDGATE_LOCAL_SITE_MAX_JOBS="20"),
                             tmp_path / "gateway.log")
    jobs_dir = settings.jobs_dir
    gateway.start()
    try:
        with httpx.Client(base_url=gateway.url, headers=user.headers, timeout=30) as client:
            for i in range(40):
                r = client.post("/api/v1/jobs", json=job_spec(i))
                assert r.status_code == 202, r.text
            # Waiting, the first 20 keep running and the site takes no more.
            wait_for(lambda: states(client)["RUNNING"] == 20, "20 running jobs")
            assert states(client) == Counter({"RUNNING": 20, "ACCEPTED": 20})
            gateway.kill9()
            # Half the running jobs finish while the gateway is down.
            running = local_job_dirs(jobs_dir)
            assert len(running) == 20
            for workdir in running[:10]:
                let_go(workdir)
            wait_for(lambda: all(JobFiles(w).result.exists() for w in running[:10]),
                     "10 jobs ended while the gateway was down")
            gateway.start()

            def all_completed() -> bool:
                let_all_go(jobs_dir)  # the rest, and each job as it starts
                return states(client)["COMPLETED"] == 40

            wait_for(all_completed, "all 40 completed")
            assert states(client) == Counter({"COMPLETED": 40})
    finally:
        gateway.stop()
        let_all_go(jobs_dir)  # none left waiting if the test failed
    assert_exactly_once(runtime, 40)


@pytest.mark.parametrize("database_kind", ["postgresql"], indirect=True)
def test_two_workers_submit_each_job_once(
    settings: Settings, runtime: Runtime, make_user: MakeUser, tmp_path: Path
) -> None:
    user = make_user()
    port = free_port()
    api = GatewayProcess(env_for(settings, GRIDGATE_PORT=str(port), GRIDGATE_RUN_WORKER="false"),
                         tmp_path / "api.log")
    workers = [GatewayProcess(env_for(settings, GRIDGATE_LOCAL_SITE_MAX_JOBS="200"),
                              tmp_path / f"worker{i}.log", worker_only=True) for i in range(2)]
    api.start()
    try:
        with httpx.Client(base_url=api.url, headers=user.headers, timeout=30) as client:
            for i in range(200):
                assert client.post("/api/v1/jobs", json=job_spec(i, RECORD)).status_code == 202
            for w in workers:
                w.start()
            wait_for(lambda: states(client)["COMPLETED"] == 200, "200 completed", 300)
    finally:
        for w in workers:
            w.stop()
        api.stop()
    assert_exactly_once(runtime, 200)
    with runtime.sessions() as session:
        submitters = Counter(session.scalars(select(Event.actor)
                                             .where(Event.to_state == "QUEUED")))
    assert len(submitters) == 2, f"both workers should have submitted: {submitters}"
