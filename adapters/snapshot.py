"""A site's queue at one moment: its cores and every job it holds. Plain data, no I/O.

`Adapter.queue_snapshot()` returns a `QueueSnapshot`, one per site and routing cycle: the
cores the site has and has free (per partition or queue where the scheduler says), and
every pending and running job of the whole queue (all users, where the scheduler lets
the gateway's account see them: see `Capabilities.whole_queue`) with its size, time
limit, submit and start times and, for pending jobs, the scheduler's own start estimate
when it has one. The forecaster (gateway.scheduling) reads these; the dialects' parsers
build them from one command each (adapters/<scheduler>/snapshot.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum


@dataclass(frozen=True)
class QueueInfo:
    """A partition or queue: its limits and how busy it is. None: the scheduler did not say."""

    name: str
    default: bool = False
    available: bool | None = None
    state: str | None = None
    max_walltime: int | None = None
    max_nodes: int | None = None
    nodes_total: int | None = None
    nodes_idle: int | None = None
    cpus_total: int | None = None
    cpus_idle: int | None = None
    cpus_per_node: int | None = None
    memory_mb_per_node: int | None = None
    # Node-local scratch of a node (Slurm's TmpDisk).
    scratch_mb_per_node: int | None = None
    jobs_running: int | None = None
    jobs_pending: int | None = None


class JobPhase(StrEnum):
    """Where a job of the queue stands: waiting for cores, or holding them."""

    PENDING = "pending"
    RUNNING = "running"


@dataclass(frozen=True)
class SnapshotJob:
    """One job of a site's queue, as its scheduler lists it. None: the scheduler did not say.

    `cores`: requested (pending) or allocated (running) cores, slots or CPUs.
    `time_limit_seconds`: its wall-clock limit; None when unlimited or left to the queue's
    default. `estimated_start`: the scheduler's own guess of a pending job's start
    (Slurm's backfill plan, PBS `estimated.start_time`, LSF's estimator); never a promise.
    """

    native_id: str
    phase: JobPhase
    raw_state: str
    cores: int | None = None
    nodes: int | None = None
    time_limit_seconds: int | None = None
    submitted_at: datetime | None = None
    started_at: datetime | None = None
    estimated_start: datetime | None = None
    queue: str | None = None
    user: str | None = None
    # The job's name: a gateway job's is its tag (`gw-<uuid>`).
    name: str | None = None


@dataclass(frozen=True)
class SiteCores:
    """The cores of a site (all its nodes, each counted once) and those free now, with its
    partitions or queues where the scheduler reports them. None: it did not say."""

    total: int | None
    free: int | None
    queues: tuple[QueueInfo, ...] = ()


@dataclass(frozen=True)
class QueueSnapshot:
    """A site's whole queue at `taken_at` (UTC): cores and every pending and running job."""

    taken_at: datetime
    total_cores: int | None
    free_cores: int | None
    queues: tuple[QueueInfo, ...]
    jobs: tuple[SnapshotJob, ...]

    @property
    def pending(self) -> tuple[SnapshotJob, ...]:
        """The jobs waiting, in the order the scheduler listed them."""
        return tuple(j for j in self.jobs if j.phase is JobPhase.PENDING)

    @property
    def running(self) -> tuple[SnapshotJob, ...]:
        """The jobs holding cores."""
        return tuple(j for j in self.jobs if j.phase is JobPhase.RUNNING)

    def queue(self, name: str) -> QueueInfo | None:
        """The partition or queue called `name`, if the scheduler reported it."""
        return next((q for q in self.queues if q.name == name), None)


def cores_of_queues(queues: Iterable[QueueInfo]) -> SiteCores:
    """Site totals as the sum of its queues' cores: right where each core belongs to one
    queue (Grid Engine counts slots per queue instance). None if a queue did not say."""
    listed = tuple(queues)
    totals = [q.cpus_total for q in listed]
    idle = [q.cpus_idle for q in listed]
    return SiteCores(
        total=None if not listed or None in totals else sum(t for t in totals if t is not None),
        free=None if not listed or None in idle else sum(i for i in idle if i is not None),
        queues=listed,
    )
