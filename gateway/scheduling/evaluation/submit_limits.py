"""A log job's time limit as known at its submit (pure).

The limit is what the walltime projection and the forecasts read of every job, and what
the router is told. A job that asked for none runs under the scheduler's default limit,
which the log does not record: the longest request seen so far stands for it (the
default is at least that). In a log without requests, the longest run known at the
submit: the runs of the jobs that ended before it and how long the jobs running then
have run so far (at least 1 s). Never the job's own run: that is known only when it ends,
and a walk given it would project every running job's end exactly. A job whose wait the
log does not record (`-1`: some logs hold start times as submit times) is taken to have
started at its submit: its run is known from the first instant it could have ended, and
while it runs it has run at least as long as if it had waited.
"""

from __future__ import annotations

import heapq

from gateway.scheduling.swf import SwfJob


class SubmitLimits:
    """Limits of one log's jobs, asked in submit order, once per job."""

    def __init__(self) -> None:
        self.requested = 0.0  # the longest request seen (0: none yet)
        self._ran = 0.0  # the longest run ended
        # Kept only while no request is seen (a log with requests never reads them):
        self._ends: list[tuple[int, int]] = []  # (end, run) of jobs submitted so far
        self._starts: list[tuple[int, int]] = []  # (start, end) of jobs not known ended

    def limit(self, job: SwfJob) -> float:
        """The job's limit at its submit; while no request is seen, its start and end
        (as logged) are noted for the jobs submitted after it."""
        if job.requested_time > 0:
            if not self.requested:  # runs never stand in again: drop what was kept
                self._ends.clear()
                self._starts.clear()
            self.requested = max(self.requested, float(job.requested_time))
            return float(job.requested_time)
        if self.requested:
            return self.requested
        limit = max(self._longest_run(job.submit), 1.0)
        if job.run >= 0:
            start = job.start if job.wait >= 0 else job.submit
            heapq.heappush(self._ends, (start + job.run, job.run))
            heapq.heappush(self._starts, (start, start + job.run))
        return limit

    def _longest_run(self, now: int) -> float:
        ends, starts = self._ends, self._starts
        while ends and ends[0][0] <= now:
            self._ran = max(self._ran, float(heapq.heappop(ends)[1]))
        while starts and starts[0][1] <= now:  # ended: counted above
            heapq.heappop(starts)
        # The earliest start of a job still running has run longest so far.
        running = float(now - starts[0][0]) if starts and starts[0][0] <= now else 0.0
        return max(self._ran, running)
