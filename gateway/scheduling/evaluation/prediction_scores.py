"""How a wait prediction method scored over a log walk, in figures that cannot flatter (pure).

A method gives each job a point (when it will start, seconds from submit) and maybe a
bound (the 95% upper bound). `Tally` counts, over every job that ran (a job a method
could not predict counts as a miss everywhere):
- the share of jobs whose wait lies within 10 min and 1 h of the point, the figure a
  start prediction is judged by, which on logs where most jobs start at once mostly
  measures that (hence the `zero_wait` baseline beside every method);
- separately, the jobs that waited longer than 10 min, the ones a prediction is for:
  the share whose point is within a factor of 2 of the wait, and the median absolute
  error of log(1 + wait);
- the bound: the share of waits under it and its median width, overall and per
  size x time-limit class (log2 processors x log2 minutes; the classes of at least
  `CLASS_MINIMUM` jobs are reported, so an average cannot hide a class it fails);
- a chance of starting within 10 min, when the method gives one: its Brier score (the
  mean squared error against what happened; a missing chance counts as the worst).

The baselines: `RollingBaseline` (median and empirical p95 of the last 500 waits in the
job's log2(processors) bucket: the naive figures of the shared traces' README) and
`RollingConformal`, the same rolling window with the quantile level adapted online by
adaptive conformal inference (Gibbs and Candes, NeurIPS 2021, their step 0.005), the
simplest bound that reaches its coverage whatever the drift.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left, bisect_right, insort
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from gateway.scheduling.prediction.wait_predictor import limit_class, size_class

TEN_MINUTES = 600.0
ONE_HOUR = 3600.0
ROLLING_WINDOW = 500
CLASS_MINIMUM = 1000
# Gibbs and Candes's step for adaptive conformal inference, used in all their experiments.
CONFORMAL_STEP = 0.005
Class = tuple[int, int]  # (size class, time-limit class)


def job_class(procs: int, time_limit: float | None) -> Class:
    """The size x time-limit class coverage is reported per."""
    return size_class(procs), limit_class(time_limit)


@dataclass
class Tally:
    """Hits of one method over the jobs it was asked for."""

    jobs: int = 0
    predicted: int = 0
    within_10min: int = 0
    within_1h: int = 0
    bounded: int = 0
    under_bound: int = 0
    bounds: list[float] = field(default_factory=list)
    long_jobs: int = 0
    long_within_2x: int = 0
    long_log_errors: list[float] = field(default_factory=list)
    classes: dict[Class, list[int]] = field(default_factory=dict)  # [jobs, under bound]
    chances: int = 0
    chance_errors: float = 0.0  # sum of squared errors (Brier)

    def score(self, wait: float, point: float | None, bound: float | None,
              where: Class = (0, -1)) -> None:
        """Count one job of class `where`; a missing point or bound counts as a miss."""
        self.jobs += 1
        long = wait > TEN_MINUTES
        self.long_jobs += long
        in_class = self.classes.setdefault(where, [0, 0])
        in_class[0] += 1
        if bound is not None:
            self.bounded += 1
            covered = wait <= bound
            self.under_bound += covered
            in_class[1] += covered
            self.bounds.append(bound)
        if point is None:
            if long:
                self.long_log_errors.append(math.inf)
            return
        self.predicted += 1
        error = abs(wait - point)
        self.within_10min += error <= TEN_MINUTES
        self.within_1h += error <= ONE_HOUR
        if long:
            self.long_within_2x += wait / 2.0 <= point <= wait * 2.0
            self.long_log_errors.append(abs(math.log1p(point) - math.log1p(wait)))

    def score_chance(self, wait: float, chance: float | None) -> None:
        """Count one job's P(start within 10 min): its squared error against what
        happened (Brier); a missing chance counts as the worst, the opposite of it."""
        happened = 1.0 if wait <= TEN_MINUTES else 0.0
        self.chances += 1
        self.chance_errors += 1.0 if chance is None else (chance - happened) ** 2

    def report(self) -> dict[str, Any]:
        """Shares over all scored jobs (misses included); bound figures when it gave bounds;
        the Brier score of P(start within 10 min) when it gave chances."""
        jobs = max(self.jobs, 1)
        report: dict[str, Any] = {
            "jobs": self.jobs,
            "predicted": self.predicted,
            "within_10min": round(self.within_10min / jobs, 4),
            "within_1h": round(self.within_1h / jobs, 4),
            "waited_over_10min": {
                "jobs": self.long_jobs,
                "within_2x": round(self.long_within_2x / max(self.long_jobs, 1), 4),
                "median_abs_log_error": (round(statistics.median(self.long_log_errors), 3)
                                         if self.long_log_errors else None),
            },
        }
        if self.chances:
            report["start_within_10min_brier"] = round(self.chance_errors / self.chances, 4)
        if not self.bounded:
            return report
        shares = {where: counts[1] / counts[0] for where, counts in self.classes.items()
                  if counts[0] >= CLASS_MINIMUM}
        worst = min(shares, key=lambda where: shares[where]) if shares else None
        return report | {
            "under_bound": round(self.under_bound / jobs, 4),
            "median_bound_width_s": statistics.median(self.bounds),
            "classes": {f"size {size} x limit {limit}": round(share, 4)
                        for (size, limit), share in sorted(shares.items())},
            "worst_class": None if worst is None else {
                "class": f"size {worst[0]} x limit {worst[1]}",
                "jobs": self.classes[worst][0], "under_bound": round(shares[worst], 4)},
        }


class RollingBaseline:
    """Last `window` waits per log2(processors) bucket: median and empirical quantiles."""

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

    def quantile(self, procs: int, level: float) -> float | None:
        """The bucket's empirical `level` quantile (its largest wait from level 1 on)."""
        ordered = self._sorted.get(size_class(procs))
        if not ordered:
            return None
        count = len(ordered)
        return ordered[max(0, min(count - 1, int(level * count)))]

    def share_within(self, procs: int, seconds: float) -> float | None:
        """The share of the bucket's waits no longer than `seconds` (None: it is empty)."""
        ordered = self._sorted.get(size_class(procs))
        return bisect_right(ordered, seconds) / len(ordered) if ordered else None

    def median_above(self, procs: int, threshold: float) -> float | None:
        """The median of the bucket's waits longer than `threshold` (None: none is)."""
        ordered = self._sorted.get(size_class(procs), [])
        first = bisect_right(ordered, threshold)  # no copy: this runs for every job walked
        late = len(ordered) - first
        return ordered[first + (late - 1) // 2] if late else None

    def predict(self, procs: int) -> tuple[float, float] | None:
        """(median, p95) of the bucket, None while it is empty."""
        median, p95 = self.quantile(procs, 0.5), self.quantile(procs, 0.95)
        return None if median is None or p95 is None else (median, p95)


class RollingConformal:
    """The rolling window's quantile at a level that adaptive conformal inference moves:
    after each outcome, level += step * (missed - (1 - target)), so the long-run share
    of misses converges to 1 - target. Outcomes arrive when jobs start (`observe`)."""

    def __init__(self, rolling: RollingBaseline, target: float = 0.95,
                 step: float = CONFORMAL_STEP) -> None:
        self.rolling = rolling
        self.target = target
        self.step = step
        self.level = target

    def bound(self, procs: int) -> float | None:
        """The bound for a job of `procs` processors now (None while its bucket is empty)."""
        return self.rolling.quantile(procs, self.level)

    def observe(self, wait: float, given: float | None) -> None:
        """Feed back the outcome of a bound given earlier (None: none was given)."""
        if given is not None:
            self.level += self.step * ((wait > given) - (1.0 - self.target))
