"""Workload logs (SWF) as the simulator's sites and jobs (pure: stdlib only).

Each log is one site: its machine size comes from the header's `MaxProcs`, else the
largest allocation. A window of each log is replayed: the jobs submitted from
`start_days` to `start_days + window_days` after the log's *first job* (logs do not
count their offsets from a common origin: HPC2N's first job is at 342,072 s), their
submit times taken from the window's start, so the logs of a federation run side by
side from a common instant 0. A log can stand for a machine `scale` times larger (its
processors and every job's scaled alike: the same schedule on its own, a machine of
another size to its neighbours). A job's estimate is its time limit as known at its
submit (`submit_limits.py`): its request, else the longest request seen so far in the
log. In a log without requests the engine's scheduler is given perfect estimates, the
usual choice in workload studies for such logs (`Truth.estimate`), and the router the
longest run known at the submit: never the job's own run, which would tell it when
every running job ends.
Jobs with no processor count or no run time (never ran) are skipped and counted.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from pathlib import Path

from gateway.scheduling.evaluation.federation.engine import Record, SiteSpec, TraceJob, Truth
from gateway.scheduling.evaluation.submit_limits import SubmitLimits
from gateway.scheduling.swf import SwfError, SwfJob, iter_jobs, machine_size, read_header

DAY = 86400.0


def site_name(path: Path) -> str:
    """A log's site name: its file name without `.gz` and `.swf`."""
    name = path.name
    for suffix in (".gz", ".swf"):
        name = name.removesuffix(suffix)
    return name or path.name


def window_start(path: Path, start_days: float = 0.0) -> float:
    """The instant (the log's own seconds) `start_days` after its first job's submit."""
    if start_days < 0:
        raise ValueError(f"a window starts at day 0 or later, not {start_days}")
    first = next(iter_jobs(path), None)
    return (first.submit if first is not None else 0.0) + start_days * DAY


def windowed(path: Path, window_days: float | None, start_days: float = 0.0
             ) -> Iterator[SwfJob]:
    """The log's jobs submitted from `start_days` to `start_days + window_days` (all after
    `start_days` when None) after its first job's submit time. A job out of submit order
    is an SwfError: a window of an unsorted log would drop jobs silently."""
    begin = window_start(path, start_days)
    horizon = None if window_days is None else begin + window_days * DAY
    last_submit = begin - start_days * DAY
    for job in iter_jobs(path):
        if job.submit < last_submit:
            raise SwfError(f"{path.name}: job {job.number} is out of submit order "
                           "(SWF logs are sorted by submit time)")
        last_submit = job.submit
        if job.submit < begin:
            continue
        if horizon is not None and job.submit >= horizon:
            return
        yield job


class TraceLog:
    """One log read as a site (`scale` times its size); `skipped` counts its jobs that
    could not be replayed."""

    def __init__(self, path: Path, name: str | None = None, scale: int = 1) -> None:
        if scale < 1:
            raise ValueError(f"a machine's scale is a whole factor of 1 or more, not {scale}")
        self.path = path
        self.scale = scale
        self.spec = SiteSpec(name or site_name(path),
                             machine_size(path, read_header(path)) * scale)
        self.skipped = 0

    def records(self, origin: int, window_days: float | None = None,
                start_days: float = 0.0) -> Iterator[Record]:
        """The log's jobs from `origin`, in submit order, in the window (`windowed`),
        submit times counted from the window's start."""
        limits = SubmitLimits()
        begin = window_start(self.path, start_days)
        self.skipped = 0
        for job in windowed(self.path, window_days, start_days):
            if job.procs <= 0 or job.run < 0:
                self.skipped += 1
                continue
            perfect = job.requested_time <= 0 and not limits.requested
            yield (TraceJob(origin, job.number, job.submit - begin, job.procs * self.scale,
                            limits.limit(job), job.user, job.queue, job.executable),
                   Truth(float(job.run), float(job.wait) if job.wait >= 0 else -1.0,
                         float(job.run) if perfect else None))


def open_logs(paths: Sequence[Path], scales: Sequence[int] | None = None) -> list[TraceLog]:
    """Read each log's header; the same file name twice gets `#2`, `#3` ... appended, a
    log scaled by a factor `xN` (`scales[i]` for log i; 1 when not given)."""
    if scales is not None and len(scales) != len(paths):
        raise ValueError(f"{len(scales)} scales for {len(paths)} logs")
    logs: list[TraceLog] = []
    seen: dict[str, int] = {}
    for index, path in enumerate(paths):
        name = site_name(path)
        seen[name] = seen.get(name, 0) + 1
        name = name if seen[name] == 1 else f"{name}#{seen[name]}"
        scale = 1 if scales is None else scales[index]
        logs.append(TraceLog(path, name if scale == 1 else f"{name}x{scale}", scale))
    return logs


def merged_records(logs: Sequence[TraceLog], window_days: float | None = None,
                   start_days: float = 0.0) -> Iterator[Record]:
    """Every log's jobs in the same window merged by submit time (log `i` is site `i`)."""
    streams = [log.records(origin, window_days, start_days)
               for origin, log in enumerate(logs)]
    return heapq.merge(*streams, key=lambda record: record[0].submit)
