"""The (probability, wait) points a forecast carries (`Forecast.wait_quantiles`), from
which P(start within t) is read: what the deadline policy ranks by (pure)."""

from __future__ import annotations

Quantile = tuple[float, float]


def wait_points(spread: tuple[Quantile, ...], factor: float, median: float,
                bound: Quantile) -> tuple[Quantile, ...]:
    """The wait history's spread (`WaitPrediction.spread`) scaled by the routed outcomes
    as the median is (`factor` >= 1), kept under the median below p = 0.5 and between it
    and the bound above; then the median and the bound themselves as given. Of equal
    waits the highest probability stands (`Forecast.p_start_within` reads the points).

    The live queue floors the median only: it stops a pass herding jobs onto one site,
    and as jobs commit there the median (and so the chance of the later times) moves; a
    floor under every point made the chances worse than a rolling window's share (the
    projection's starts come late: jobs end before their predicted run times).
    """
    quantile, top = bound
    shown = [(p, min((1.0 + wait) * factor - 1.0, median)) for p, wait in spread if p < 0.5]
    shown.append((0.5, median))
    shown += [(p, min(max((1.0 + wait) * factor - 1.0, median), top)) for p, wait in spread
              if 0.5 < p < quantile]
    shown.append(bound)
    points: list[Quantile] = []
    for point in shown:  # waits never decrease along `shown`
        if points and point[1] <= points[-1][1]:
            points.pop()
        points.append(point)
    return tuple(points)
