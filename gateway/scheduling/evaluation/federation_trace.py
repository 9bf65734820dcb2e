"""Workload logs (SWF) as the simulator's sites and jobs (pure: stdlib only).

Each log is one site: its machine size comes from the header's `MaxProcs`, else the
largest allocation. Its jobs keep their submit times relative to the log's start, so
the logs of a federation run side by side from a common instant 0, and optionally only
the first `window_days` of each. A job's estimate is its requested time; when a job did
not state one, the longest request seen so far in the log stands for the scheduler's
limit; before any request is seen (a log without requests), the run time is used,
i.e. perfect estimates, the usual choice in workload studies for such logs.
Jobs with no processor count or no run time (never ran) are skipped and counted.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from pathlib import Path

from gateway.scheduling.evaluation.federation import Record, SiteSpec, TraceJob, Truth
from gateway.scheduling.swf import SwfError, SwfJob, iter_jobs, machine_size, read_header

DAY = 86400.0


def site_name(path: Path) -> str:
    """A log's site name: its file name without `.gz` and `.swf`."""
    name = path.name
    for suffix in (".gz", ".swf"):
        name = name.removesuffix(suffix)
    return name or path.name


def windowed(path: Path, window_days: float | None) -> Iterator[SwfJob]:
    """The log's jobs submitted within `window_days` of its start (all when None)."""
    horizon = None if window_days is None else window_days * DAY
    for job in iter_jobs(path):
        if horizon is not None and job.submit >= horizon:
            return
        yield job


class TraceLog:
    """One log read as a site; `skipped` counts its jobs that could not be replayed."""

    def __init__(self, path: Path, name: str | None = None) -> None:
        self.path = path
        self.spec = SiteSpec(name or site_name(path), machine_size(path, read_header(path)))
        self.skipped = 0

    def records(self, origin: int, window_days: float | None = None) -> Iterator[Record]:
        """The log's jobs from `origin`, in submit order, up to `window_days` after its start."""
        longest = 0
        last_submit = 0
        self.skipped = 0
        for job in windowed(self.path, window_days):
            if job.submit < last_submit:
                raise SwfError(f"{self.path.name}: job {job.number} is out of submit order "
                               "(SWF logs are sorted by submit time)")
            last_submit = job.submit
            if job.procs <= 0 or job.run < 0:
                self.skipped += 1
                continue
            if job.requested_time > 0:
                longest = max(longest, job.requested_time)
            requested = job.requested_time if job.requested_time > 0 else longest or job.run
            yield (TraceJob(origin, job.number, float(job.submit), job.procs, float(requested),
                            job.user, job.queue, job.executable),
                   Truth(float(job.run), float(job.wait) if job.wait >= 0 else -1.0))


def open_logs(paths: Sequence[Path]) -> list[TraceLog]:
    """Read each log's header; the same file name twice gets `#2`, `#3` ... appended."""
    logs: list[TraceLog] = []
    seen: dict[str, int] = {}
    for path in paths:
        name = site_name(path)
        seen[name] = seen.get(name, 0) + 1
        logs.append(TraceLog(path, name if seen[name] == 1 else f"{name}#{seen[name]}"))
    return logs


def merged_records(logs: Sequence[TraceLog], window_days: float | None = None
                   ) -> Iterator[Record]:
    """Every log's jobs merged by submit time (log `i` is site `i`)."""
    streams = [log.records(origin, window_days) for origin, log in enumerate(logs)]
    return heapq.merge(*streams, key=lambda record: record[0].submit)
