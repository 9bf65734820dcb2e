"""Queue-wait predictor, QBETS-style (Nurmi, Brevik and Wolski, JSSPP 2007) (pure).

Waits are kept per job class at five levels, finest first:
(site, projection class) when the live queue was projected for the job, then
(site, queue, size class, time-limit class) -> (site, queue, size class) -> (site, queue)
-> (site). The projection class is the log2 class of the job's walltime-based EASY
projection at submit: the history then says how long jobs the queue projected alike
really waited (the projection alone is a poor point, a good conditioner). It is not split
by size as well: the projection already weighs the size against the queue, and the
split left most classes thin (bounds at the maximum of 59 waits). A prediction uses the
finest level whose history is long enough for the bound (`minimum_history`: 59 waits
for a 95% bound on the 0.95 quantile), so a thin class falls back to a coarser one
instead of guessing. Every observation feeds every level it belongs to.

Parameters come from the method's statistics, not from any one log:
- quantile 0.95 and confidence 0.95: what the bound promises to users;
- minimum history: the fewest waits for which the binomial bound exists;
- change point: the shortest run of consecutive misses that a correct bound shows
  anywhere in the window with probability below 1 - confidence (4 for 823 waits);
- window capacity: large enough that the binomial bound's own rank margin is small,
  z * sqrt(q (1 - q) / n) <= (1 - q) / 4 (the bound targets at most the 0.9625 quantile
  for q = 0.95), which needs n ~ 800; above it, old waits add little precision and slow
  the reaction to drifts the change-point test does not catch.
Classes are powers of two (processors; time limit in minutes), the usual
log-scale buckets of workload studies (Feitelson, "Workload Modeling", ch. 3).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from gateway.scheduling.wait_history import WaitHistory

DEFAULT_QUANTILE = 0.95
DEFAULT_CONFIDENCE = 0.95
LEVELS = (
    "site/projection",
    "site/queue/size/limit",
    "site/queue/size",
    "site/queue",
    "site",
)


def rank_margin_capacity(quantile: float, confidence: float) -> int:
    """Window size at which the bound's rank margin is a quarter of 1 - quantile."""
    z = _normal_quantile(confidence)
    return math.ceil(quantile * (1.0 - quantile) * (4.0 * z / (1.0 - quantile)) ** 2)


def _normal_quantile(p: float) -> float:
    # Inverse of the standard normal CDF by bisection on math.erf (no scipy here).
    low, high = -10.0, 10.0
    for _ in range(100):
        middle = (low + high) / 2.0
        if 0.5 * (1.0 + math.erf(middle / math.sqrt(2.0))) < p:
            low = middle
        else:
            high = middle
    return (low + high) / 2.0


def size_class(procs: int) -> int:
    """floor(log2(processors)); 0 for one processor (and for unknown counts)."""
    return max(procs, 1).bit_length() - 1


def limit_class(seconds: float | None) -> int:
    """floor(log2(time limit in minutes)), -1 when the limit is unknown."""
    if seconds is None or seconds <= 0:
        return -1
    return max(int(seconds // 60), 1).bit_length() - 1


def wait_class(seconds: float | None) -> int:
    """Class of a projected wait: 0 under a minute, then 1 + floor(log2(minutes)); -1 unknown."""
    if seconds is None:
        return -1
    return 0 if seconds < 60 else int(seconds // 60).bit_length()


@dataclass(frozen=True, slots=True)
class JobClass:
    """What the predictor knows of a job before it starts.

    `projected_wait` is the live queue's EASY projection for the job at that instant
    (None without a snapshot): waits are then also kept per projection class, so the
    history says how long jobs *that the queue projected alike* really waited.
    """

    site: str
    queue: str
    procs: int
    time_limit: float | None
    projected_wait: float | None = None


@dataclass(frozen=True, slots=True)
class WaitPrediction:
    """Median and upper bound of the wait (seconds), and which history gave them."""

    median: float
    upper_bound: float
    quantile: float
    confidence: float
    level: str
    history: int


def _keys(job: JobClass) -> tuple[tuple[object, ...] | None, ...]:
    size = size_class(job.procs)
    projection = wait_class(job.projected_wait)
    with_projection = projection >= 0
    return (
        (job.site, "projection", projection) if with_projection else None,
        (job.site, job.queue, size, limit_class(job.time_limit)),
        (job.site, job.queue, size),
        (job.site, job.queue),
        (job.site,),
    )


class WaitPredictor:
    """Incremental per-class wait histories; `observe` waits as jobs start, `predict` any time."""

    def __init__(
        self,
        quantile: float = DEFAULT_QUANTILE,
        confidence: float = DEFAULT_CONFIDENCE,
        capacity: int | None = None,
    ) -> None:
        self.quantile = quantile
        self.confidence = confidence
        self.capacity = capacity if capacity is not None else rank_margin_capacity(
            quantile, confidence
        )
        self._histories: dict[tuple[object, ...], WaitHistory] = {}

    def observe(self, job: JobClass, wait: float) -> None:
        """Record the wait of a job that has started."""
        for key in _keys(job):
            if key is None:
                continue
            history = self._histories.get(key)
            if history is None:
                history = WaitHistory(self.capacity, self.quantile, self.confidence)
                self._histories[key] = history
            history.add(max(wait, 0.0))

    def _history(self, job: JobClass) -> tuple[str, WaitHistory] | None:
        for level, key in zip(LEVELS, _keys(job), strict=True):
            history = self._histories.get(key) if key is not None else None
            if history is not None and history.upper_bound() is not None:
                return level, history
        return None

    def predict(self, job: JobClass) -> WaitPrediction | None:
        """Median and bound from the finest class with enough history; None before that."""
        found = self._history(job)
        if found is None:
            return None
        level, history = found
        median, bound = history.median(), history.upper_bound()
        assert median is not None and bound is not None  # the history passed the minimum
        return WaitPrediction(median, bound, self.quantile, self.confidence, level, len(history))

    def probability_by(self, job: JobClass, seconds: float) -> float | None:
        """P(the job starts within `seconds` of now), from the same history as `predict`."""
        found = self._history(job)
        return None if found is None else found[1].probability_by(seconds)

    def change_points(self) -> int:
        """Change points detected so far over all histories (for reports)."""
        return sum(history.change_points for history in self._histories.values())
