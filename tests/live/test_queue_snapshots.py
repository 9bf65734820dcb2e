"""Queue snapshots on the live testbed: real Slurm (roadrunner) and real Grid Engine (galaxy)
over the pinned SSH transport, the queue filled by two other users' jobs."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import timedelta

import pytest

from adapters.base import Resources, SubmitRequest
from adapters.batch.adapter import BatchAdapter
from adapters.sge import SgeDialect
from adapters.slurm import SlurmDialect
from adapters.snapshot import JobPhase, QueueSnapshot, SnapshotJob
from adapters.ssh import SshTarget, SshTransport
from testbed.state import SiteInfo, TestbedInfo
from tests.testbed.fixture import ssh

ACCOUNT = "gwcomm"
DEADLINE = 150.0
# Slurm's backfill plans pending jobs every bf_interval (30 s by default).
BACKFILL_DEADLINE = 150.0


def _adapter(site: SiteInfo) -> BatchAdapter:
    transport = SshTransport(SshTarget(host=site.ip, port=site.ssh_port, user=ACCOUNT,
                                       host_keys=(site.host_key,), key_path=site.key(ACCOUNT),
                                       site=site.name))
    dialect = SlurmDialect() if site.kind == "slurm" else SgeDialect(parallel_environment="mpi")
    return BatchAdapter(transport, dialect)


@pytest.fixture
def roadrunner(testbed: TestbedInfo) -> Iterator[tuple[SiteInfo, BatchAdapter]]:
    site = testbed.sites["roadrunner"]
    adapter = _adapter(site)
    yield site, adapter
    adapter.transport.close()


@pytest.fixture
def galaxy(testbed: TestbedInfo) -> Iterator[tuple[SiteInfo, BatchAdapter]]:
    site = testbed.sites["galaxy"]
    adapter = _adapter(site)
    yield site, adapter
    adapter.transport.close()


def _until(adapter: BatchAdapter, what: str, ready: Callable[[QueueSnapshot], bool],
           deadline: float = DEADLINE) -> QueueSnapshot:
    end = time.monotonic() + deadline
    while True:
        snap = adapter.queue_snapshot()
        if ready(snap):
            return snap
        if time.monotonic() > end:
            pytest.fail(f"{adapter.kind}: {what} not seen in {deadline:.0f} s: {snap}")
        time.sleep(1.0)


def _submit(site: SiteInfo, account: str, argv: list[str]) -> str:
    return ssh(site, account, argv).stdout.strip().split(";")[0]


def test_slurm_snapshot_of_a_filled_site(roadrunner: tuple[SiteInfo, BatchAdapter]) -> None:
    site, adapter = roadrunner
    idle = _until(adapter, "an empty queue", lambda s: not s.jobs)
    assert idle.total_cores == idle.free_cores and (idle.total_cores or 0) >= 2
    assert {q.name for q in idle.queues} >= {"debug", "batch"}
    sbatch = ["sbatch", "--parsable", "--wrap", "sleep 600"]
    owners: dict[str, str] = {}
    try:
        big = _submit(site, "gwalice", [*sbatch, "-n", "2", "-t", "20", "-J", "snap-big"])
        owners[big] = "gwalice"
        small = _submit(site, "gwbob", [*sbatch, "-n", "1", "-t", "10", "-J", "snap-small"])
        owners[small] = "gwbob"
        snap, jobs = _filled(adapter, big, small)
        # The free cores fell by the running job's size.
        assert snap.free_cores == (idle.free_cores or 0) - 2
        # The backfill scheduler's start estimate: when the big job reaches its limit
        # (to Slurm's bf_resolution, 60 s).
        planned = _until(adapter, "a start estimate", lambda s: any(
            j.native_id == small and j.estimated_start for j in s.jobs), BACKFILL_DEADLINE)
        estimate = next(j.estimated_start for j in planned.jobs if j.native_id == small)
        started = jobs[big].started_at
        assert estimate is not None and started is not None
        expected = started + timedelta(seconds=1200)
        assert abs(estimate - expected) <= timedelta(seconds=60), (estimate, expected)
        # sbatch --test-only for a job of the same shape (a job id is consumed, none
        # queued): it would wait behind the pending one, never start before it.
        dry = adapter.estimate_start(SubmitRequest(
            tag="gw-snapshot-test-only", workdir=site.scratch_root,
            argv=["true"], resources=Resources(ranks=1, walltime_seconds=600)))
        assert dry is not None and dry.start >= estimate, (dry, estimate)
    finally:
        for job_id, owner in owners.items():
            ssh(site, owner, ["scancel", job_id], check=False)
    _until(adapter, "the cancelled jobs gone", lambda s: not set(owners) & {
        j.native_id for j in s.jobs})


def _filled(adapter: BatchAdapter, big: str, small: str
            ) -> tuple[QueueSnapshot, dict[str, SnapshotJob]]:
    """Once gwalice's 2-core, 20-minute job runs and gwbob's 1-core, 10-minute one waits
    behind it: the snapshot shows both, with their sizes, limits, users and times."""
    snap = _until(adapter, "the big job running and the small one pending", lambda s: {
        (j.native_id, j.phase) for j in s.jobs} == {
        (big, JobPhase.RUNNING), (small, JobPhase.PENDING)})
    jobs = {j.native_id: j for j in snap.jobs}
    assert (jobs[big].cores, jobs[big].time_limit_seconds, jobs[big].user) == (
        2, 1200, "gwalice")
    assert (jobs[small].cores, jobs[small].time_limit_seconds, jobs[small].user) == (
        1, 600, "gwbob")
    assert jobs[big].started_at is not None and jobs[small].submitted_at is not None
    return snap, jobs


def test_sge_snapshot_of_a_filled_site(galaxy: tuple[SiteInfo, BatchAdapter]) -> None:
    site, adapter = galaxy
    idle = _until(adapter, "an empty queue", lambda s: not s.jobs)
    assert idle.total_cores == idle.free_cores and (idle.total_cores or 0) >= 2
    qsub = ["qsub", "-terse", "-b", "y"]
    owners: dict[str, str] = {}
    try:
        big = _submit(site, "gwalice", [*qsub, "-N", "snap-big", "-pe", "mpi", "2",
                                        "-l", "h_rt=1200", "sleep", "600"])
        owners[big] = "gwalice"
        small = _submit(site, "gwbob", [*qsub, "-N", "snap-small", "-l", "h_rt=600",
                                        "sleep", "600"])
        owners[small] = "gwbob"
        snap, _ = _filled(adapter, big, small)
        assert all(j.estimated_start is None for j in snap.jobs)
        assert snap.free_cores == (idle.free_cores or 0) - 2
    finally:
        for job_id, owner in owners.items():
            ssh(site, owner, ["qdel", job_id], check=False)
    _until(adapter, "the deleted jobs gone", lambda s: not set(owners) & {
        j.native_id for j in s.jobs})
