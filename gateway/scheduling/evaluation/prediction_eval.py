"""Offline evaluation of wait predictors on a workload log, in time order (pure).

At each job's submit instant every method predicts with only what was known then: the
waits of jobs that had started before that instant, and the queue as the log says it
was (jobs submitted but not started; jobs started but not ended). Four methods run in
the same pass, so they see the same jobs:
- `qbets`: `WaitPredictor` (per-class histories with QBETS's change points, the
  prediction-rank bound calibrated by the outcomes of its earlier bounds, the median of
  the best-scored class), its classes including the walltime-based projection's wait
  class and the user; each job's prediction is fed back when the job starts;
- `easy_projection`: the queue projected with the EASY engine, requested times as run
  times (what `sbatch --test-only` answers); a point, so its "bound" is the point itself;
- `easy_predicted`: the same projection with guessed run times (`LogQueue.runtime_guess`);
- `rolling`: median and empirical p95 of the last 500 waits in the job's log2(processors)
  bucket (the naive baselines of the shared traces' README).
"""

from __future__ import annotations

import heapq
import statistics
from bisect import bisect_left, insort
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gateway.scheduling.easy import project
from gateway.scheduling.swf import SwfJob
from gateway.scheduling.wait_predictor import (
    JobClass,
    WaitPrediction,
    WaitPredictor,
    size_class,
)

Slot = tuple[int, float]  # (processors, seconds), as `project` takes them
TEN_MINUTES = 600.0
ONE_HOUR = 3600.0
ROLLING_WINDOW = 500


@dataclass
class Tally:
    """Hits of one method over the jobs it predicted."""

    jobs: int = 0
    predicted: int = 0
    within_10min: int = 0
    within_1h: int = 0
    under_bound: int = 0
    bounds: list[float] = field(default_factory=list)

    def score(self, wait: float, point: float | None, bound: float | None) -> None:
        """Count one job; a missing prediction counts as a miss everywhere."""
        self.jobs += 1
        if point is None or bound is None:
            return
        self.predicted += 1
        error = abs(wait - point)
        self.within_10min += error <= TEN_MINUTES
        self.within_1h += error <= ONE_HOUR
        self.under_bound += wait <= bound
        self.bounds.append(bound)

    def report(self) -> dict[str, Any]:
        """Shares over all scored jobs (misses included) and the bound's median width."""
        jobs = max(self.jobs, 1)
        return {
            "jobs": self.jobs,
            "predicted": self.predicted,
            "within_10min": round(self.within_10min / jobs, 4),
            "within_1h": round(self.within_1h / jobs, 4),
            "under_bound": round(self.under_bound / jobs, 4),
            "median_bound_width_s": statistics.median(self.bounds) if self.bounds else None,
        }


class RollingBaseline:
    """Last `window` waits per log2(processors) bucket: median and empirical p95."""

    def __init__(self, window: int = ROLLING_WINDOW) -> None:
        self.window = window
        self._arrivals: dict[int, deque[float]] = {}
        self._sorted: dict[int, list[float]] = {}

    def observe(self, procs: int, wait: float) -> None:
        """Record a started job's wait in its bucket, dropping the oldest beyond the window."""
        bucket = size_class(procs)
        arrivals = self._arrivals.setdefault(bucket, deque())
        ordered = self._sorted.setdefault(bucket, [])
        arrivals.append(wait)
        insort(ordered, wait)
        if len(arrivals) > self.window:
            del ordered[bisect_left(ordered, arrivals.popleft())]

    def predict(self, procs: int) -> tuple[float, float] | None:
        """(median, p95) of the bucket, None while it is empty."""
        ordered = self._sorted.get(size_class(procs))
        if not ordered:
            return None
        count = len(ordered)
        return ordered[count // 2], ordered[min(count - 1, int(0.95 * count))]


@dataclass(order=True)
class _Pending:
    start: int
    seq: int
    job: SwfJob = field(compare=False)
    projected_wait: float = field(compare=False)
    predicted: WaitPrediction | None = field(compare=False)


@dataclass(slots=True)
class _Held:
    """A job the log holds at the walk's instant: queued (start < 0) or running."""

    procs: int
    requested: float
    guess: float
    user: int
    start: float = -1.0


def job_class(job: SwfJob, site: str, projected_wait: float | None) -> JobClass:
    """The predictor's view of a log job: queue, processors, requested time, projection, user."""
    limit = float(job.requested_time) if job.requested_time > 0 else None
    user = str(job.user) if job.user >= 0 else None
    return JobClass(site, str(job.queue), job.procs, limit, projected_wait, user)


class LogQueue:
    """The machine's queue and running set as the log says they were, walked forward in time.

    It also keeps each user's last two finished run times: their mean, capped by the
    request, is the runtime guess of Tsafrir, Etsion and Feitelson (IEEE TPDS 2007), used
    for the `easy_predicted` projection (the runtime predictor of issue 12 item 5 will
    replace this stand-in).
    """

    def __init__(self, site: str, predictor: WaitPredictor, rolling: RollingBaseline) -> None:
        self.site = site
        self.predictor = predictor
        self.rolling = rolling
        self.held: dict[int, _Held] = {}
        self._starts: list[_Pending] = []
        self._ends: list[tuple[float, int]] = []
        self._user_runs: dict[int, deque[float]] = {}
        self._seq = 0

    def advance(self, now: float) -> None:
        """Start the jobs that started before `now` (their waits become known), end the ended."""
        while self._starts and self._starts[0].start < now:
            started = heapq.heappop(self._starts)
            known = started.job
            self.predictor.observe(
                job_class(known, self.site, started.projected_wait), known.wait, started.predicted
            )
            self.rolling.observe(known.procs, known.wait)
            self.held[started.seq].start = started.start
            heapq.heappush(self._ends, (started.start + known.run, started.seq))
        while self._ends and self._ends[0][0] <= now:
            end, seq = heapq.heappop(self._ends)
            held = self.held.pop(seq)
            self._user_runs.setdefault(held.user, deque(maxlen=2)).append(end - held.start)

    def runtime_guess(self, user: int, requested: float) -> float:
        """Mean of the user's last two run times, capped by the request (the request if none)."""
        last = self._user_runs.get(user)
        return min(sum(last) / len(last), requested) if last else requested

    def snapshot(self, now: float, guessed: bool) -> tuple[list[Slot], list[Slot]]:
        """(running, queued) for `project`: requested times, or guesses where `guessed`.

        A running job past its guess falls back to its request (it is still running).
        """
        running: list[Slot] = []
        queued: list[Slot] = []
        for held in self.held.values():
            runtime = held.guess if guessed else held.requested
            if held.start < 0:
                queued.append((held.procs, runtime))
            elif held.start + runtime > now:
                running.append((held.procs, held.start + runtime - now))
            else:
                running.append((held.procs, held.start + held.requested - now))
        return running, queued

    def submit(
        self, job: SwfJob, requested: float, guess: float, projected_wait: float,
        predicted: WaitPrediction | None = None,
    ) -> None:
        """Hold a submitted job until the log's start time (`predicted`: its prediction, fed
        back to the predictor's calibration when it starts)."""
        self._seq += 1
        self.held[self._seq] = _Held(job.procs, requested, guess, job.user)
        heapq.heappush(
            self._starts, _Pending(job.start, self._seq, job, projected_wait, predicted)
        )


def _project_job(
    processors: int, queue: LogQueue, now: float, job: Slot, guessed: bool
) -> float:
    running, queued = queue.snapshot(now, guessed)
    queued.append(job)
    start = project(processors, running, queued, until_index=len(queued) - 1)[-1]
    assert start is not None  # the projection runs until this job starts
    return start


def evaluate(jobs: Iterable[SwfJob], processors: int, site: str = "log") -> dict[str, Any]:
    """Walk a log (sorted by submit time) and score every method on every job that ran.

    Jobs with an unknown wait, processor count or run time (never started) are skipped.
    """
    predictor = WaitPredictor()
    rolling = RollingBaseline()
    queue = LogQueue(site, predictor, rolling)
    tallies = {name: Tally() for name in ("qbets", "easy_projection", "easy_predicted", "rolling")}
    longest_request = 0.0
    waits: list[float] = []
    for job in jobs:
        if job.wait < 0 or job.procs <= 0 or job.run < 0:
            continue
        now = float(job.submit)
        queue.advance(now)
        if job.requested_time > 0:
            longest_request = max(longest_request, float(job.requested_time))
        # Unknown request: the scheduler would apply its limit; the longest seen stands for it.
        requested = float(job.requested_time) if job.requested_time > 0 else longest_request
        guess = queue.runtime_guess(job.user, requested)
        wait = float(job.wait)
        waits.append(wait)

        projected = _project_job(processors, queue, now, (job.procs, requested), False)
        tallies["easy_projection"].score(wait, projected, projected)
        guessed = _project_job(processors, queue, now, (job.procs, guess), True)
        tallies["easy_predicted"].score(wait, guessed, guessed)
        prediction = predictor.predict(job_class(job, site, projected))
        tallies["qbets"].score(
            wait,
            prediction.median if prediction else None,
            prediction.upper_bound if prediction else None,
        )
        baseline = rolling.predict(job.procs)
        tallies["rolling"].score(
            wait, baseline[0] if baseline else None, baseline[1] if baseline else None
        )
        queue.submit(job, requested, guess, projected, prediction)
    return {name: tally.report() for name, tally in tallies.items()} | {
        "change_points": predictor.change_points(),
        "bound_scale": round(predictor.scale(site), 3),
        "hindsight_median_within_10min": hindsight_within(waits, TEN_MINUTES),
    }


def hindsight_within(waits: list[float], tolerance: float) -> float | None:
    """Share of waits within `tolerance` of the whole log's median, known only in hindsight.

    A reference, not a method: no causal predictor is told the log's median in advance,
    and on logs whose waits are mostly near zero it is about as good as a point can be.
    """
    if not waits:
        return None
    median = statistics.median(waits)
    return round(sum(abs(wait - median) <= tolerance for wait in waits) / len(waits), 4)
