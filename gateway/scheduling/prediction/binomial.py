"""Order-statistic bounds on quantiles and on the next observation (pure: stdlib only).

The method of QBETS (Nurmi, Brevik and Wolski, "QBETS: Queue Bounds Estimation from
Time Series", JSSPP 2007): among n independent observations sorted ascending
x(1) <= ... <= x(n), the number that fall below the true q-quantile is Binomial(n, q).
So x(k) is at least the q-quantile with probability P(Binomial(n, q) <= k - 1); the
smallest k for which that probability reaches the confidence c makes x(k) an upper
c-confidence bound on the q-quantile. No distribution is assumed for the observations.

A *prediction* bound answers a different question, the one a user asks of a single job:
for n + 1 exchangeable observations, the next one exceeds x(k) with probability
1 - k / (n + 1), so k = ceil(q (n + 1)) bounds the next observation with probability q
(Wilks 1941; the split-conformal bound). It needs only n >= q / (1 - q) observations (19
for q = 0.95, against 59 for the confidence bound) and carries no confidence margin.
"""

from __future__ import annotations

import math
from functools import lru_cache

# Sums of exp(log pmf) carry rounding; a tail equal to 1 - c (exactly, in theory) is allowed.
_ROUNDING = 1e-9


def _log_pmf(n: int, k: int, q: float) -> float:
    return (
        math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
        + k * math.log(q) + (n - k) * math.log1p(-q)
    )


@lru_cache(maxsize=65536)
def upper_bound_rank(n: int, quantile: float, confidence: float) -> int | None:
    """1-based rank of the order statistic bounding the quantile from above (None: n too small).

    k is the smallest rank with P(Binomial(n, quantile) <= k - 1) >= confidence, found by
    summing the upper tail P(X >= k) down from n until it would exceed 1 - confidence.
    """
    if not (0.0 < quantile < 1.0 and 0.0 < confidence < 1.0) or n <= 0:
        raise ValueError("quantile and confidence lie strictly between 0 and 1; n >= 1")
    allowed_tail = 1.0 - confidence
    tail = 0.0
    # After adding pmf(k), tail = P(X >= k); x(k) is a valid bound while tail <= allowed.
    for k in range(n, 0, -1):
        tail += math.exp(_log_pmf(n, k, quantile))
        if tail > allowed_tail + _ROUNDING:
            return k + 1 if k < n else None
    return 1


def prediction_rank(n: int, quantile: float) -> int | None:
    """1-based rank k = ceil(q (n + 1)) whose x(k) bounds the next observation (None: n too small).

    Rounding guard: q (n + 1) that is an integer up to float error keeps that integer.
    """
    if not 0.0 < quantile < 1.0 or n <= 0:
        raise ValueError("the quantile lies strictly between 0 and 1; n >= 1")
    rank = max(1, math.ceil(quantile * (n + 1) - _ROUNDING))
    return rank if rank <= n else None


def minimum_prediction_history(quantile: float) -> int:
    """Fewest observations for which the prediction bound exists: ceil(q (n + 1)) <= n."""
    n = 1
    while prediction_rank(n, quantile) is None:
        n += 1
    return n


def minimum_history(quantile: float, confidence: float) -> int:
    """Fewest observations for which an upper bound exists: 1 - q**n >= c (rank n = the max)."""
    return max(1, math.ceil(math.log(1.0 - confidence) / math.log(quantile)))


def consecutive_miss_limit(quantile: float, confidence: float, window: int = 1) -> int:
    """Consecutive observations above a correct q-bound that signal a change point.

    Each observation exceeds a correct bound with probability at most 1 - q, so a given
    run of r misses has probability (1 - q)**r. The test runs after every observation, so
    over a window of n observations a correct bound shows such a run somewhere with
    probability about n (1 - q)**r; the limit is the shortest run for which that stays
    below 1 - c (a family-wise false-alarm rate, so a long window does not reset itself).
    """
    miss = 1.0 - quantile
    runs = 1
    while max(window, 1) * miss**runs >= (1.0 - confidence) * (1.0 - _ROUNDING):
        runs += 1
    return runs
