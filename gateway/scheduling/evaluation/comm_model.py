"""Point-to-point communication time models (pure: no I/O).

The two-regime model of the seed paper (004, Tables 2-3) describes MPI message
times with one line for eager messages and another for rendezvous ones:

    t(n) = a0 + a1*n   for n <= threshold
    t(n) = b0 + b1*n   for n >  threshold

Times are in microseconds and sizes in bytes, as in the paper. The ping-pong
helpers turn comms1-style half round-trip measurements into latency and
bandwidth figures.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Line:
    """A weighted least-squares line `intercept + slope*n` and its squared error."""

    intercept: float
    slope: float
    sse: float

    def __call__(self, n: float) -> float:
        return self.intercept + self.slope * n


@dataclass(frozen=True)
class TwoRegimeModel:
    """t(n) = a0 + a1*n up to `threshold` bytes, b0 + b1*n above it (microseconds).

    `threshold` is the largest measured size of the first regime; the true switch
    lies somewhere in (threshold, first_above]. `rmse` is the root mean square
    *relative* error of the fit; `rmse_us` the absolute one in microseconds.
    """

    a0: float
    a1: float
    b0: float
    b1: float
    threshold: int
    first_above: int
    rmse: float
    rmse_us: float
    points: int

    def predict(self, n: float) -> float:
        """Predicted time in microseconds for an `n`-byte message."""
        if n <= self.threshold:
            return self.a0 + self.a1 * n
        return self.b0 + self.b1 * n

    @property
    def asymptotic_bandwidth_mbs(self) -> float:
        """Large-message bandwidth 1/b1 in MB/s (bytes per microsecond), inf if b1 <= 0."""
        return 1.0 / self.b1 if self.b1 > 0 else math.inf


def fit_line(sizes: Sequence[float], times: Sequence[float], *,
             nonnegative_slope: bool = False) -> Line:
    """Least squares of `times` on `sizes`, minimising squared relative residuals.

    Each point is weighted by 1/t^2 so that a 1 us error at 4 us counts as much
    as a 10 ms error at 40 ms (see `fit_two_regime` for why). With
    `nonnegative_slope` the slope is constrained to >= 0; the problem is convex, so
    when the free optimum has a negative slope the constrained one is a constant.
    """
    if len(sizes) != len(times) or len(sizes) < 2:
        raise ValueError("a line needs at least two (size, time) points")
    weights = [1.0 / _scale(t) ** 2 for t in times]
    sw = sum(weights)
    mean_x = sum(w * x for w, x in zip(weights, sizes, strict=True)) / sw
    mean_y = sum(w * y for w, y in zip(weights, times, strict=True)) / sw
    # Centred sums keep the normal equations well conditioned for n up to ~1e7.
    sxx = sum(w * (x - mean_x) ** 2 for w, x in zip(weights, sizes, strict=True))
    sxy = sum(
        w * (x - mean_x) * (y - mean_y) for w, x, y in zip(weights, sizes, times, strict=True)
    )
    slope = sxy / sxx if sxx > 0 else 0.0
    if nonnegative_slope and slope < 0:
        slope = 0.0
    intercept = mean_y - slope * mean_x
    sse = sum(
        w * (intercept + slope * x - y) ** 2
        for w, x, y in zip(weights, sizes, times, strict=True)
    )
    return Line(intercept, slope, sse)


def fit_two_regime(
    sizes: Sequence[float], times: Sequence[float], *, min_points: int = 2,
    nonnegative_slopes: bool = True,
) -> TwoRegimeModel:
    """Fit the two-regime model, trying every measured size as the threshold.

    For each split of the sorted sizes into a lower part (at least `min_points`
    distinct sizes) and an upper part (likewise), fit one line per side and keep
    the split with the lowest total error.

    Why relative error: message times span four or more orders of magnitude
    (a few us at 0 B, tens of ms at 1 MiB). Plain least squares would let the
    largest messages decide everything, so the eager regime -- the latency that
    matters for small messages -- would be fitted badly and the threshold would
    drift. Fitting in log space would fix the scale but makes a linear model
    non-linear (needing an iterative solver) and cannot represent the paper's
    Ethernet rendezvous line, whose b0 is negative. Weighting each residual by
    1/t^2 minimises squared *relative* error, which is what log space gives for
    small residuals, while each side stays a closed-form weighted linear fit.

    Slopes are kept >= 0 by default: a bigger message never takes less time, and
    on a busy machine noise among the small sizes would otherwise give the eager
    line a negative slope that extrapolates to nonsense.
    """
    if len(sizes) != len(times):
        raise ValueError("sizes and times must have the same length")
    for t in times:
        if not math.isfinite(t) or t <= 0:
            raise ValueError(f"times must be positive and finite, got {t!r}")
    points = sorted(zip(sizes, times, strict=True))
    distinct = sorted({x for x, _ in points})
    if len(distinct) < 2 * min_points:
        raise ValueError(
            f"need at least {2 * min_points} distinct message sizes to fit two regimes, "
            f"got {len(distinct)}"
        )
    best: tuple[float, int, Line, Line] | None = None
    for k in range(min_points - 1, len(distinct) - min_points):
        cut = distinct[k]
        lower = [(x, y) for x, y in points if x <= cut]
        upper = [(x, y) for x, y in points if x > cut]
        low = fit_line([x for x, _ in lower], [y for _, y in lower],
                       nonnegative_slope=nonnegative_slopes)
        high = fit_line([x for x, _ in upper], [y for _, y in upper],
                        nonnegative_slope=nonnegative_slopes)
        total = low.sse + high.sse
        # Strict '<' keeps the smallest threshold among exact ties.
        if best is None or total < best[0] - 1e-15 * max(1.0, best[0]):
            best = (total, k, low, high)
    assert best is not None  # the loop runs at least once, by the size check above
    total, k, low, high = best
    cut = distinct[k]
    abs_sse = sum(((low if x <= cut else high)(x) - y) ** 2 for x, y in points)
    return TwoRegimeModel(
        a0=low.intercept, a1=low.slope, b0=high.intercept, b1=high.slope,
        threshold=int(cut), first_above=int(distinct[k + 1]),
        rmse=math.sqrt(total / len(points)), rmse_us=math.sqrt(abs_sse / len(points)),
        points=len(points),
    )


def _scale(t: float) -> float:
    # Guards the weight against a zero time (clock resolution) without changing
    # the ranking of realistic fits.
    return max(abs(t), 1e-9)


@dataclass(frozen=True)
class PingPongRow:
    """One message size of a ping-pong run: comms1's per-message time and bandwidth."""

    nbytes: int
    repetitions: int
    time_us: float
    bandwidth_mbs: float


def pingpong_row(nbytes: int, repetitions: int, half_round_trip_s: float) -> PingPongRow:
    """Time (us) and bandwidth (MB/s, 10^6 bytes/s) from a half round-trip time."""
    if half_round_trip_s <= 0:
        raise ValueError("half round-trip time must be positive")
    time_us = half_round_trip_s * 1e6
    # bytes per microsecond is exactly MB/s (10^6 bytes per second).
    return PingPongRow(nbytes, repetitions, time_us, nbytes / time_us)


def latency_us(rows: Sequence[PingPongRow]) -> float:
    """Latency: the half round-trip of the smallest message measured."""
    if not rows:
        raise ValueError("no ping-pong measurements")
    return min(rows, key=lambda r: (r.nbytes, r.time_us)).time_us


def peak_bandwidth_mbs(rows: Sequence[PingPongRow]) -> float:
    """The highest bandwidth measured over all message sizes, in MB/s."""
    if not rows:
        raise ValueError("no ping-pong measurements")
    return max(r.bandwidth_mbs for r in rows)
