"""Crash-safe submission on the live testbed (real Slurm and real Grid Engine over SSH).

If the gateway loses the answer of `sbatch`/`qsub` (a timeout, a dropped connection) or
dies after the scheduler took the job but before the job id is committed, the attempt
stays SUBMITTING under its lease; whoever recovers it finds the scheduler's job by its
tag and adopts it. The proof is counted at the scheduler: exactly one job per tag.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from adapters.batch.adapter import BatchAdapter
from adapters.errors import SiteUnavailable
from adapters.transport import CommandResult, Transport
from gateway.api.app import create_app
from gateway.auth.accounts import create_local_user
from gateway.auth.tokens import issue_access_token
from gateway.db.engine import transaction
from gateway.db.models import Attempt, Event, Job
from gateway.domain.states import AttemptState
from gateway.runtime import Runtime, build_runtime
from gateway.settings import Settings
from gateway.worker.loop import Worker
from gateway.worker.submission.submit import FAULT_AFTER_SUBMIT_ENV
from testbed.state import SiteInfo, TestbedInfo
from tests.conftest import ALL_SCOPES
from tests.live.scheduler_jobs import scheduler_jobs
from tests.worker.gateway_process import GatewayProcess, free_port

SITES = ("roadrunner", "galaxy")
LEASE_SECONDS = 2
FINAL = ("COMPLETED", "FAILED", "CANCELLED")


# --- a gateway over one testbed site ----------------------------------------------------

def site_settings(testbed: TestbedInfo, site: str, base: Path) -> Settings:
    configs = base / "site-configs"
    configs.mkdir()
    shutil.copy(Path(testbed.site_configs) / f"{site}.yaml", configs)
    return Settings(data_dir=base / "data", database_url=f"sqlite:///{base / 'gw.db'}",
                    site_configs_dir=configs, local_site_enabled=False, run_worker=False,
                    submit_lease_seconds=LEASE_SECONDS, worker_poll_seconds=0.2,
                    public_url="http://gateway.test")


@pytest.fixture
def gateway(testbed: TestbedInfo, request: pytest.FixtureRequest, tmp_path: Path
            ) -> Iterator[tuple[Runtime, TestClient, dict[str, str]]]:
    runtime = build_runtime(site_settings(testbed, request.param, tmp_path))
    with transaction(runtime.sessions) as session:
        user = create_local_user(session, f"c{uuid.uuid4().hex[:8]}", "correct horse battery")
        user_id, name = user.id, user.username
    token = issue_access_token(runtime.settings, runtime.keys, subject=user_id,
                               client_id="tests", scope=ALL_SCOPES, username=name).token
    with TestClient(create_app(runtime=runtime)) as client:
        yield runtime, client, {"Authorization": f"Bearer {token}"}
    runtime.close()


def post_job(client: TestClient, headers: dict[str, str], site: str, seconds: int) -> str:
    r = client.post("/api/v1/jobs", headers=headers, json={
        "name": "crash-safe", "site": site, "executable": "/bin/sh",
        "args": ["-c", f"sleep {seconds}"], "resources": {"walltime": 120}})
    assert r.status_code == 202, r.text
    job_id: str = r.json()["id"]
    return job_id


def attempts_of(runtime: Runtime, job_ids: Sequence[str]) -> dict[str, list[Attempt]]:
    with runtime.sessions() as session:
        rows = session.scalars(select(Attempt).where(Attempt.job_id.in_(job_ids))).all()
    found: dict[str, list[Attempt]] = {job_id: [] for job_id in job_ids}
    for attempt in rows:
        found[attempt.job_id].append(attempt)
    return found


def assert_each_submitted_once(runtime: Runtime, site: SiteInfo, job_ids: Sequence[str]
                               ) -> None:
    """Every job COMPLETED, with one attempt, one QUEUED event and one scheduler job."""
    with runtime.sessions() as session:
        states = {job_id: state for job_id, state in session.execute(
            select(Job.id, Job.state).where(Job.id.in_(job_ids)))}
        queued = {job_id: count for job_id, count in session.execute(
            select(Event.job_id, func.count()).where(Event.job_id.in_(job_ids),
                                                     Event.to_state == "QUEUED")
            .group_by(Event.job_id))}
    assert states == {job_id: "COMPLETED" for job_id in job_ids}
    assert queued == {job_id: 1 for job_id in job_ids}
    for job_id, attempts in attempts_of(runtime, job_ids).items():
        assert len(attempts) == 1, (job_id, attempts)
        attempt = attempts[0]
        assert attempt.native_id is not None
        assert scheduler_jobs(site, attempt.tag) == {attempt.native_id}, attempt.tag


# --- the lost answer, in process --------------------------------------------------------

class ReplyLost:
    """The real transport, except that the first submit command runs and then its answer
    is lost, as when the connection drops or the submit times out after the scheduler
    took the job. Counts the submit commands it saw."""

    SUBMITTERS = ("sbatch", "qsub")

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.submits = 0

    def run(self, argv: Sequence[str], *, stdin: bytes | None = None,
            timeout: float = 60.0) -> CommandResult:
        result = self.inner.run(argv, stdin=stdin, timeout=timeout)
        # argv jobs are submitted as `sh -c 'mkdir ...; exec "$@"' ... sbatch ...`.
        submitter = next((w for w in argv if os.path.basename(w) in self.SUBMITTERS), None)
        if submitter is not None:
            self.submits += 1
            if self.submits == 1:
                raise SiteUnavailable(f"`{submitter}` timed out; its answer was lost")
        return result

    def put_bytes(self, data: bytes, path: str, *, mode: int = 0o600) -> None:
        self.inner.put_bytes(data, path, mode=mode)

    def read_bytes(self, path: str, offset: int = 0, limit: int = 1 << 20
                   ) -> tuple[bytes, int | None]:
        return self.inner.read_bytes(path, offset, limit)

    def close(self) -> None:
        self.inner.close()


@pytest.mark.parametrize("gateway", SITES, indirect=True)
def test_lost_submit_answer_is_adopted_by_tag(
    gateway: tuple[Runtime, TestClient, dict[str, str]], testbed: TestbedInfo
) -> None:
    runtime, client, headers = gateway
    entry = next(iter(runtime.sites))
    site = testbed.sites[entry.name]
    adapter = entry.adapter
    assert isinstance(adapter, BatchAdapter)
    lossy = ReplyLost(adapter.transport)
    adapter.transport = lossy
    job_id = post_job(client, headers, entry.name, 3)
    worker = Worker(runtime)

    worker.run_once()  # submits; the answer is lost
    [attempt] = attempts_of(runtime, [job_id])[job_id]
    assert lossy.submits == 1
    assert attempt.state == AttemptState.SUBMITTING and attempt.native_id is None
    assert attempt.lease_until is not None
    [native_id] = scheduler_jobs(site, attempt.tag)  # yet the scheduler has the job

    end = time.monotonic() + 120
    state = ""
    while state not in FINAL and time.monotonic() < end:
        worker.run_once()  # after the lease: recovery by tag
        state = client.get(f"/api/v1/jobs/{job_id}", headers=headers).json()["state"]
        time.sleep(0.5)
    assert lossy.submits == 1  # adopted, never submitted again
    assert_each_submitted_once(runtime, site, [job_id])
    assert attempts_of(runtime, [job_id])[job_id][0].native_id == native_id


# --- the real crash: the gateway process dies between submit and commit -----------------

JOBS = 6
CRASHES = 3


def process_env(settings: Settings, **extra: str) -> dict[str, str]:
    env = {
        "GRIDGATE_DATA_DIR": str(settings.data_dir),
        "GRIDGATE_DATABASE_URL": settings.resolved_database_url,
        "GRIDGATE_PUBLIC_URL": settings.public_url,
        "GRIDGATE_SITE_CONFIGS_DIR": str(settings.site_configs_dir),
        "GRIDGATE_LOCAL_SITE_ENABLED": "false",
        "GRIDGATE_SUBMIT_LEASE_SECONDS": str(LEASE_SECONDS),
        "GRIDGATE_WORKER_POLL_SECONDS": "0.2",
    }
    env.update(extra)
    return env


@pytest.mark.parametrize("gateway", SITES, indirect=True)
def test_gateway_killed_after_submit_adopts_on_restart(
    gateway: tuple[Runtime, TestClient, dict[str, str]], testbed: TestbedInfo, tmp_path: Path
) -> None:
    runtime, client, headers = gateway
    name = next(iter(runtime.sites)).name
    site = testbed.sites[name]
    job_ids = [post_job(client, headers, name, 3) for _ in range(JOBS)]
    log = tmp_path / "gateway.log"

    # Each crashing worker adopts what the one before it left at the scheduler, then
    # dies right after its own first submit returned, before the commit. It submits one
    # job at a time so that the count below is exact (with batched or concurrent submits
    # a crash leaves several such jobs, recovered the same way, as tested below).
    for crash in range(CRASHES):
        crashing = GatewayProcess(process_env(runtime.settings, **{
            FAULT_AFTER_SUBMIT_ENV: "exit", "GRIDGATE_WORKER_SUBMIT_THREADS": "1",
            "GRIDGATE_WORKER_SUBMIT_BATCH": "1"}),
                                  log, worker_only=True)
        crashing.start()
        assert crashing.proc is not None
        try:
            assert crashing.proc.wait(timeout=120) == 137, log.read_text()[-3000:]
        except subprocess.TimeoutExpired:
            crashing.stop()
            raise
        attempts = [a for found in attempts_of(runtime, job_ids).values() for a in found]
        pending = [a for a in attempts if a.state == AttemptState.SUBMITTING]
        assert len(attempts) == JOBS and len(pending) == JOBS - crash
        assert sum(a.native_id is not None for a in attempts) == crash
        # Exactly one of the uncommitted attempts reached the scheduler.
        assert sorted(len(scheduler_jobs(site, a.tag)) for a in pending) == (
            [0] * (len(pending) - 1) + [1])

    # One more crash, now with the remaining submits in flight at once: it adopts the job
    # the last crash left, and dies leaving one or more new ones uncommitted.
    crashing = GatewayProcess(process_env(runtime.settings, **{FAULT_AFTER_SUBMIT_ENV: "exit"}),
                              log, worker_only=True)
    crashing.start()
    assert crashing.proc is not None and crashing.proc.wait(timeout=120) == 137
    attempts = [a for found in attempts_of(runtime, job_ids).values() for a in found]
    pending = [a for a in attempts if a.state == AttemptState.SUBMITTING]
    reached = [len(scheduler_jobs(site, a.tag)) for a in pending]
    # (Whether its adoption committed before a concurrent submit returned is a race.)
    assert len(pending) in (JOBS - CRASHES, JOBS - CRASHES + 1)
    assert set(reached) <= {0, 1} and any(reached)  # never two jobs for one tag

    serving = GatewayProcess(process_env(runtime.settings, GRIDGATE_PORT=str(free_port())), log)
    serving.start()
    try:
        end = time.monotonic() + 180
        while time.monotonic() < end:
            with runtime.sessions() as session:
                done = session.scalar(select(func.count()).select_from(Job).where(
                    Job.id.in_(job_ids), Job.state.in_(FINAL))) or 0
            if done == JOBS:
                break
            time.sleep(0.5)
    finally:
        serving.stop()
    assert_each_submitted_once(runtime, site, job_ids)
