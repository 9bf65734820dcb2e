"""Side-by-side held-out comparison of runtime scaling models (pure: no I/O).

Every model is fitted on the same `scaling_eval.Split`s and judged on the same held-out
points; `paired_mape` refuses sides that did not predict the same points, so a figure
can never compare two different sets of predictions. `linear_scaling_predictor` is the
yardstick any model should beat, and `target` is issue 27's test of ours against
another tool.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.scheduling.evaluation.scaling_eval import HeldOut, mape


def linear_scaling_predictor(
    train_procs: Sequence[float], train_times: Sequence[float], at: Sequence[float]
) -> list[float]:
    """Perfect linear scaling from the nearest training count: t(p) = t(p0) * p0 / p.

    Nearest on a log scale (counts are mostly powers of two: 16 is as far from 8 as 32 is
    from 16); on a tie the smaller count, and t(p0) is the mean of the runs at p0.
    """
    by_count: dict[float, list[float]] = {}
    for p, t in zip(train_procs, train_times, strict=True):
        by_count.setdefault(p, []).append(t)
    if not by_count:
        raise ValueError("no training points")
    out = []
    for p in at:
        p0 = min(by_count, key=lambda q: (abs(math.log(p / q)), q))
        t0 = sum(by_count[p0]) / len(by_count[p0])
        out.append(t0 * p0 / p)
    return out


@dataclass(frozen=True)
class SideFigures:
    """One model's held-out MAPE (percent; None with no prediction), prediction count,
    and how many of its predictions were not finite (these make the MAPE infinite)."""

    mape_pct: float | None
    predictions: int
    non_finite: int


def paired_mape(sides: Mapping[str, Sequence[HeldOut]]) -> dict[str, SideFigures]:
    """MAPE per side, after checking every side predicted the same points in the same order.

    Raises ValueError naming the first side whose (count, measured time) sequence differs
    from the first side's.
    """
    names = list(sides)
    if not names:
        return {}
    reference = [(h.procs, h.measured) for h in sides[names[0]]]
    for name in names[1:]:
        points = [(h.procs, h.measured) for h in sides[name]]
        if points != reference:
            raise ValueError(f"{name!r} predicted other points than {names[0]!r}")
    return {
        name: SideFigures(
            mape(sides[name]),
            len(sides[name]),
            sum(not math.isfinite(h.predicted) for h in sides[name]),
        )
        for name in names
    }


@dataclass(frozen=True)
class TargetCheck:
    """Issue 27's runtime-model target on one table and protocol."""

    no_worse: bool  # our MAPE <= theirs
    within_limit: bool | None  # ours <= limit; None when neither side reaches the limit
    met: bool


def target(ours: float | None, theirs: float | None, limit_pct: float) -> TargetCheck:
    """Ours no worse than theirs, and at most `limit_pct` wherever either side reaches it.

    With no figure on either side there is nothing to compare: the check is not met.
    """
    if ours is None or theirs is None:
        return TargetCheck(False, None, False)
    no_worse = ours <= theirs
    within = ours <= limit_pct if min(ours, theirs) <= limit_pct else None
    return TargetCheck(no_worse, within, no_worse and within is not False)
