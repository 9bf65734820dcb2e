"""A gateway killed between a native array's submission and its commit (issue 16), on the
live testbed's real Slurm and Grid Engine: the restarted gateway adopts the scheduler's
array job by the array's tag and never submits it again. Counted at the scheduler: one
job under the array's tag, none under a task's.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from gateway.db.models import Job
from gateway.domain.states import AttemptState
from gateway.runtime import Runtime
from gateway.worker.submission.submit import FAULT_AFTER_SUBMIT_ENV
from testbed.state import TestbedInfo
from tests.live.scheduler_jobs import scheduler_jobs
from tests.live.test_crash_safe_submit import (
    FINAL,
    SITES,
    attempts_of,
    process_env,
)
from tests.live.test_crash_safe_submit import gateway as gateway  # the fixture
from tests.worker.gateway_process import GatewayProcess, free_port

TASKS = 6


def _base(native_id: str) -> str:
    return native_id.split("_")[0].split(".")[0]


@pytest.mark.parametrize("gateway", SITES, indirect=True)
def test_gateway_killed_after_a_native_array_submit_adopts_it_on_restart(
    gateway: tuple[Runtime, TestClient, dict[str, str]], testbed: TestbedInfo, tmp_path: Path
) -> None:
    runtime, client, headers = gateway
    name = next(iter(runtime.sites)).name
    site = testbed.sites[name]
    r = client.post("/api/v1/jobs", headers=headers, json={
        "name": "crash-array", "site": name, "executable": "/bin/sh",
        "args": ["-c", 'sleep 1; echo "$GRIDGATE_ARRAY_TASK_ID"'],
        "array": f"0-{TASKS - 1}%2", "resources": {"walltime": 120}})
    assert r.status_code == 202, r.text
    array_id = r.json()["array_job_id"]
    tag = f"gw-{array_id}"
    with runtime.sessions() as session:
        job_ids = list(session.scalars(select(Job.id).where(Job.array_job_id == array_id)))
    log = tmp_path / "gateway.log"

    crashing = GatewayProcess(process_env(runtime.settings, **{FAULT_AFTER_SUBMIT_ENV: "exit"}),
                              log, worker_only=True)
    crashing.start()
    assert crashing.proc is not None
    try:
        assert crashing.proc.wait(timeout=120) == 137, log.read_text()[-3000:]
    except subprocess.TimeoutExpired:
        crashing.stop()
        raise
    attempts = [a for found in attempts_of(runtime, job_ids).values() for a in found]
    assert len(attempts) == TASKS
    assert all(a.state == AttemptState.SUBMITTING and a.native_id is None for a in attempts)
    [base] = {_base(i) for i in scheduler_jobs(site, tag)}  # the scheduler has the array

    serving = GatewayProcess(process_env(runtime.settings, GRIDGATE_PORT=str(free_port())), log)
    serving.start()
    try:
        end = time.monotonic() + 180
        while time.monotonic() < end:
            with runtime.sessions() as session:
                done = session.scalar(select(func.count()).select_from(Job).where(
                    Job.id.in_(job_ids), Job.state.in_(FINAL))) or 0
            if done == TASKS:
                break
            time.sleep(0.5)
    finally:
        serving.stop()
    with runtime.sessions() as session:
        states = set(session.scalars(select(Job.state).where(Job.id.in_(job_ids))))
    assert states == {"COMPLETED"}
    found = attempts_of(runtime, job_ids)
    assert all(len(a) == 1 for a in found.values())
    assert {_base(a[0].native_id or "") for a in found.values()} == {base}
    assert {_base(i) for i in scheduler_jobs(site, tag)} == {base}  # submitted once
    for attempts in found.values():
        assert scheduler_jobs(site, attempts[0].tag) == set()
