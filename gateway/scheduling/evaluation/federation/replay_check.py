"""Validate the EASY engine on a real log: replay it alone on its own machine (pure).

Each job keeps its submit time, processors and real run time; its requested time is the
scheduler's estimate (its run time when the request is unknown). The simulated waits are
compared with the logged ones. They differ for reasons no EASY model removes:
- the real schedulers were not plain FCFS+EASY: Maui (HPC2N) orders by priority and
  fair share, LoadLeveler (CTC) and the SDSC Blue Horizon had several queues with their
  own limits and priorities, and KTH's EASY ran on a machine partly used interactively;
- the logs omit what held processors outside the batch queue (down nodes, dedicated
  time, reservations, jobs removed by the cleaning of "-cln" logs), so the real machine
  was smaller and busier than the replayed one at times;
- cancelled jobs ran (or waited) only until their cancellation, and users reacted to
  the queue they saw (resubmissions), which a replay cannot reproduce.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from gateway.scheduling.queues.easy import SimJob, replay
from gateway.scheduling.swf import SwfJob


def replay_against_log(jobs: Iterable[SwfJob], processors: int) -> dict[str, Any]:
    """Replay the log's jobs with EASY; compare simulated and logged waits (seconds)."""
    logged: dict[int, int] = {}

    def simulated_jobs() -> Iterable[SimJob]:
        for index, job in enumerate(jobs):
            if job.procs <= 0 or job.run < 0 or job.wait < 0:
                continue
            logged[index] = job.wait
            estimate = job.requested_time if job.requested_time > 0 else job.run
            yield SimJob(index, job.submit, job.procs, job.run, estimate)

    pairs = [(start - job.submit, logged.pop(job.key)) for job, start in
             replay(simulated_jobs(), processors)]
    if not pairs:
        raise ValueError("the log holds no job with a known wait, run time and processor count")
    return wait_agreement([float(s) for s, _ in pairs], [float(r) for _, r in pairs])


def wait_agreement(simulated: Sequence[float], logged: Sequence[float]) -> dict[str, Any]:
    """How simulated waits agree with the logged ones of the same jobs (seconds): Pearson
    correlation, median absolute error and both means."""
    try:
        correlation: float | None = round(statistics.correlation(simulated, logged), 4)
    except statistics.StatisticsError:  # fewer than two jobs, or every wait the same
        correlation = None
    return {
        "jobs": len(simulated),
        "correlation": correlation,
        "median_abs_error_s": statistics.median(abs(s - g) for s, g in zip(simulated, logged,
                                                                           strict=True)),
        "mean_wait_simulated_s": round(statistics.fmean(simulated), 1),
        "mean_wait_logged_s": round(statistics.fmean(logged), 1),
    }
