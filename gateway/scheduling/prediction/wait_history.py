"""A bounded, sorted window of observed queue waits with change-point detection (pure).

One `WaitHistory` per job class. Each observation is checked against the bound the
history gave just before it arrived: a correct q-bound is exceeded with probability at
most 1 - q, so a run of consecutive misses longer than the binomial allows anywhere in
the window (`consecutive_miss_limit`) means the queue changed regime, and the history is cut back
to its most recent `minimum_history` observations (QBETS's change-point rule).

Cost per observation: a binary search and one list insertion/deletion in a window of
at most `capacity` values (a memmove of a few KB), so O(log n) comparisons and a small,
bounded copy; queries are O(1) (quantiles by rank) or O(log n) (probabilities, the
likely start: two binary searches per candidate, cached until the next wait).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right, insort
from collections import deque

from gateway.scheduling.prediction.binomial import (
    consecutive_miss_limit,
    minimum_history,
    prediction_rank,
    upper_bound_rank,
)


class WaitHistory:
    """Waits (seconds) in arrival order and sorted, bounded to the `capacity` most recent."""

    def __init__(self, capacity: int, quantile: float, confidence: float) -> None:
        self.quantile = quantile
        self.confidence = confidence
        self.minimum = minimum_history(quantile, confidence)
        if capacity < self.minimum:
            raise ValueError(f"a history holds at least {self.minimum} waits for this bound")
        self.capacity = capacity
        self.miss_limit = consecutive_miss_limit(quantile, confidence, capacity)
        self._arrivals: deque[float] = deque()
        self._sorted: list[float] = []
        self._misses = 0
        self.change_points = 0
        self._likely: tuple[float, float] | None = None  # (tolerance, point) until an add
        self._spread: tuple[tuple[float, ...], tuple[tuple[float, float], ...]] | None = None

    def __len__(self) -> int:
        return len(self._sorted)

    def add(self, wait: float) -> bool:
        """Record one observed wait; True when it completed a change point (history cut)."""
        self._likely = self._spread = None
        bound = self.upper_bound()
        if bound is not None and wait > bound:
            self._misses += 1
        else:
            self._misses = 0
        self._arrivals.append(wait)
        insort(self._sorted, wait)
        if len(self._arrivals) > self.capacity:
            self._remove(self._arrivals.popleft())
        if self._misses >= self.miss_limit:
            while len(self._arrivals) > self.minimum:
                self._remove(self._arrivals.popleft())
            self._misses = 0
            self.change_points += 1
            return True
        return False

    def upper_bound(self) -> float | None:
        """Upper `confidence` bound on the `quantile` of the wait, None while too few waits."""
        return self.order_bound(self.quantile, self.confidence)

    def order_bound(self, quantile: float, confidence: float) -> float | None:
        """The binomial order-statistic bound for any quantile and confidence."""
        count = len(self._sorted)
        if count == 0:
            return None
        rank = upper_bound_rank(count, quantile, confidence)
        return None if rank is None else self._sorted[rank - 1]

    def prediction_bound(self, quantile: float) -> float | None:
        """Order statistic of rank ceil(q (n + 1)): exceeded by the next wait with probability
        at most 1 - q if waits are exchangeable; None while the window is too short."""
        count = len(self._sorted)
        rank = prediction_rank(count, quantile) if count else None
        return None if rank is None else self._sorted[rank - 1]

    def spread(self, levels: tuple[float, ...]) -> tuple[tuple[float, float], ...]:
        """(level, `prediction_bound(level)`) for each level that has one; kept until the
        next wait (a routing pass asks for the same class's again and again)."""
        if self._spread is None or self._spread[0] != levels:
            self._spread = (levels, tuple(
                (level, bound) for level in levels
                if (bound := self.prediction_bound(level)) is not None))
        return self._spread[1]

    def median(self) -> float | None:
        """Median estimate: the order statistic that is above the median with probability 1/2."""
        return self.order_bound(0.5, 0.5)

    def median_above(self, threshold: float) -> float | None:
        """`median` of the waits longer than `threshold` (None: none is): the wait of a
        job that has not started by then, the second part of a two-part forecast."""
        first = bisect_right(self._sorted, threshold)
        count = len(self._sorted) - first
        rank = upper_bound_rank(count, 0.5, 0.5) if count else None
        return None if rank is None else self._sorted[first + rank - 1]

    def likely(self, tolerance: float) -> float | None:
        """The wait the next one most probably lies within `tolerance` of (None: empty).

        The point p that catches the most waits of the window in [p - tolerance, p +
        tolerance]: the best point when a prediction counts as right within the
        tolerance (the +-10 min a start prediction is judged by), where the median is
        best for absolute error. Searched over the windows that start at 0, start at a
        decile or centre on one (a bounded set: the cost does not grow with the window);
        ties go to the earlier point.
        """
        if self._likely is not None and self._likely[0] == tolerance:
            return self._likely[1]
        ordered = self._sorted
        count = len(ordered)
        if count == 0:
            return None
        # The candidates in increasing order (ties then go to the earlier point without
        # a comparison); a repeated one is skipped (many waits are 0: deciles repeat).
        candidates = [tolerance]
        for tenth in range(11):
            value = ordered[(count - 1) * tenth // 10]
            candidates.append(value if value > tolerance else tolerance)
            candidates.append(value + tolerance)
        candidates.sort()
        best, best_hits, previous = tolerance, -1, -1.0
        for point in candidates:
            if point == previous:
                continue
            previous = point
            hits = (bisect_right(ordered, point + tolerance)
                    - bisect_left(ordered, point - tolerance))
            if hits > best_hits:
                best, best_hits = point, hits
        self._likely = (tolerance, best)
        return best

    def probability_by(self, wait: float) -> float:
        """Empirical P(wait <= `wait`) over the window (0 when empty)."""
        count = len(self._sorted)
        return bisect_right(self._sorted, wait) / count if count else 0.0

    def _remove(self, wait: float) -> None:
        del self._sorted[bisect_left(self._sorted, wait)]
