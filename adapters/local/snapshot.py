"""The local site's queue snapshot: its unfinished jobs and this machine's cores.

The local site has no scheduler: a job starts as soon as its runner claims it, so its
"queue" is the jobs of its jobs root that have not ended (pending only for the moment
between submit and the runner's start). Cores: those this process may run on, less the
cores of the running jobs (ranks x threads each, as submitted). Other work on the machine
is not seen, so the snapshot is not the whole machine's load (Capabilities.whole_queue).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from adapters.base import JobStatus
from adapters.batch.types import job_phase
from adapters.local.files import JobFiles, load_record
from adapters.local.index import JobIndex
from adapters.local.state import job_status
from adapters.snapshot import JobPhase, QueueSnapshot, SnapshotJob


def _number(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def requested_cores(request: Mapping[str, Any]) -> int | None:
    """ranks x threads of a job's request.json, as submitted; None if it does not say."""
    resources = request.get("resources")
    resources = resources if isinstance(resources, dict) else {}
    ranks, threads = _number(resources.get("ranks")), _number(resources.get("threads_per_rank"))
    return ranks * threads if ranks and threads else None


def _job(status: JobStatus, request: Mapping[str, Any]) -> SnapshotJob | None:
    phase = job_phase(status.state)
    if phase is None:
        return None
    walltime = request.get("walltime_seconds")
    submitted = request.get("submitted_at")
    return SnapshotJob(
        native_id=status.native_id,
        phase=phase,
        raw_state=status.raw_state,
        cores=requested_cores(request),
        nodes=1,
        time_limit_seconds=round(walltime) if isinstance(walltime, int | float) else None,
        submitted_at=_iso(submitted),
        started_at=status.started_at if phase is JobPhase.RUNNING else None,
        name=request.get("tag") if isinstance(request.get("tag"), str) else None,
    )


def _iso(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def local_snapshot(index: JobIndex, taken_at: datetime, cores: int,
                   runner_start_timeout: float) -> QueueSnapshot:
    """Every unfinished job below the index's root, and `cores` less the running ones'."""
    jobs = []
    for native_id in index.native_ids():
        files = index.files_of(native_id)
        # A recorded outcome is final: one stat instead of reading the job's records.
        if files is None or files.result.exists():
            continue
        job = _snapshot_job(native_id, files, runner_start_timeout)
        if job is not None:
            jobs.append(job)
    jobs.sort(key=lambda j: (j.submitted_at is None, j.submitted_at or taken_at))
    busy = sum(j.cores or 1 for j in jobs if j.phase is JobPhase.RUNNING)
    return QueueSnapshot(taken_at=taken_at, total_cores=cores, free_cores=max(cores - busy, 0),
                         queues=(), jobs=tuple(jobs))


def _snapshot_job(native_id: str, files: JobFiles, timeout: float) -> SnapshotJob | None:
    try:
        status = job_status(native_id, files, timeout)
        request = load_record(files.request, dict)
    except (OSError, ValueError):
        return None  # a job directory being written or removed: not counted this cycle
    if status is None or request is None:
        return None
    return _job(status, request)
