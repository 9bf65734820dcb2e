"""The local site's queue snapshot, with real runners and processes."""

from __future__ import annotations

import os
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

from adapters.base import NativeState, Resources, SubmitRequest
from adapters.local import LocalAdapter
from adapters.snapshot import JobPhase
from tests.adapters.test_local import wait_final, wait_for, wait_state

SLEEP = [sys.executable, "-c", "import time; time.sleep(60)"]


def _request(root: Path, name: str, ranks: int, walltime: int = 600) -> SubmitRequest:
    tag = f"gw-{uuid.uuid4()}"
    return SubmitRequest(tag=tag, workdir=str(root / name), argv=SLEEP,
                         resources=Resources(ranks=ranks, walltime_seconds=walltime))


def test_running_jobs_take_cores_and_finished_ones_leave(tmp_path: Path) -> None:
    adapter = LocalAdapter(tmp_path, None)
    cores = len(os.sched_getaffinity(0))
    empty = adapter.queue_snapshot()
    assert (empty.jobs, empty.total_cores, empty.free_cores) == ((), cores, cores)
    before = datetime.now(UTC)
    first = _request(tmp_path, "a", ranks=2, walltime=900)
    a = adapter.submit(first)
    b = adapter.submit(_request(tmp_path, "b", ranks=1))
    wait_state(adapter, a, NativeState.RUNNING)
    wait_state(adapter, b, NativeState.RUNNING)
    try:
        snap = adapter.queue_snapshot()
        jobs = {j.native_id: j for j in snap.jobs}
        assert set(jobs) == {a, b} and snap.taken_at >= before
        job = jobs[a]
        assert (job.phase, job.cores, job.time_limit_seconds, job.name) == (
            JobPhase.RUNNING, 2, 900, first.tag)
        assert job.submitted_at is not None and before <= job.submitted_at <= snap.taken_at
        assert job.started_at is not None and job.submitted_at <= job.started_at
        assert snap.free_cores == max(cores - 3, 0)
    finally:
        adapter.cancel(a)
        adapter.cancel(b)
    wait_final(adapter, a)
    wait_final(adapter, b)
    after = wait_for("the jobs to leave the snapshot",
                     lambda: (s := adapter.queue_snapshot()).jobs == () and s)
    assert after.free_cores == cores


def test_a_job_not_yet_started_is_pending(tmp_path: Path) -> None:
    adapter = LocalAdapter(tmp_path, None)
    # Prepared but no runner started: the moment between submit and the runner's claim.
    native_id = adapter.prepare(_request(tmp_path, "p", ranks=1))
    (job,) = adapter.queue_snapshot().jobs
    assert (job.native_id, job.phase, job.cores, job.started_at) == (
        native_id, JobPhase.PENDING, 1, None)
