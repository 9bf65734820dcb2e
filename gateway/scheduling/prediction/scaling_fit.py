"""Scaling model of a job's runtime over its processor count (pure: no I/O).

    t(p) = a0 + a1/p + a2*log(p),   a0, a1, a2 >= 0

a0 is the serial part, a1/p the perfectly parallel part and a2*log(p) the cost that
grows with the machine (tree reductions, broadcasts). The coefficients are fitted by
non-negative least squares on *relative* residuals (t_fit - t)/t: runtimes of one
application span orders of magnitude across processor counts, and an absolute fit
would serve the one-processor run and ignore the 64-processor one.

The NNLS is exact by enumeration. Its minimiser x* has a support S (the coefficients
that are positive); on the face {x_j = 0 for j not in S} x* is an interior minimum of
a convex quadratic, hence the unconstrained least-squares solution on the columns S.
So x* is among the 2^3 = 8 subset solutions that are feasible (all >= 0), and every
feasible candidate is a point of the constraint set, so none beats x*: the feasible
candidate with the least error is the optimum. With three unknowns that is at most
eight 3x3 systems, cheaper and simpler than an iterative active-set method.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

MIN_COUNTS = 3
# Below this pivot a subset's normal equations are treated as singular (skipped).
_SINGULAR = 1e-12


class ScalingFitError(ValueError):
    """The measurements cannot determine the three coefficients."""


def _basis(p: float) -> tuple[float, float, float]:
    return (1.0, 1.0 / p, math.log(p))


@dataclass(frozen=True)
class ScalingFit:
    """Fitted t(p) = a0 + a1/p + a2*log p with every coefficient >= 0."""

    a0: float
    a1: float
    a2: float
    rms_relative_error: float

    def predict(self, p: float) -> float:
        """Predicted runtime on `p` processors (same unit as the fitted times)."""
        if p <= 0:
            raise ValueError(f"processor count must be positive, got {p}")
        b = _basis(p)
        return self.a0 * b[0] + self.a1 * b[1] + self.a2 * b[2]


def _solve(matrix: list[list[float]], rhs: list[float]) -> list[float] | None:
    """Gaussian elimination with partial pivoting; None if the system is singular."""
    n = len(rhs)
    a = [[*row, rhs[i]] for i, row in enumerate(matrix)]
    scale = max((abs(v) for row in matrix for v in row), default=0.0) or 1.0
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        if abs(a[pivot][col]) <= _SINGULAR * scale:
            return None
        a[col], a[pivot] = a[pivot], a[col]
        for r in range(col + 1, n):
            f = a[r][col] / a[col][col]
            for c in range(col, n + 1):
                a[r][c] -= f * a[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x


def fit_scaling(procs: Sequence[float], times: Sequence[float]) -> ScalingFit:
    """Fit t(p) = a0 + a1/p + a2*log p by NNLS on relative residuals.

    Needs at least three distinct processor counts and positive times; raises
    ScalingFitError otherwise.
    """
    if len(procs) != len(times):
        raise ScalingFitError(f"{len(procs)} processor counts but {len(times)} times")
    if any(p <= 0 for p in procs) or any(t <= 0 for t in times):
        raise ScalingFitError("processor counts and times must be positive")
    distinct = len(set(procs))
    if distinct < MIN_COUNTS:
        raise ScalingFitError(
            f"a scaling fit needs at least {MIN_COUNTS} distinct processor counts, got {distinct}"
        )
    # Rows scaled by 1/t: least squares on these is least squares on relative error.
    rows = [[v / t for v in _basis(p)] for p, t in zip(procs, times, strict=True)]

    def sse(coef: Sequence[float]) -> float:
        return sum((sum(c * v for c, v in zip(coef, row, strict=True)) - 1.0) ** 2 for row in rows)

    best: list[float] = [0.0, 0.0, 0.0]  # the empty support: always feasible
    best_sse = sse(best)
    for size in (1, 2, 3):
        for support in combinations(range(3), size):
            normal = [[sum(r[i] * r[j] for r in rows) for j in support] for i in support]
            rhs = [sum(r[i] for r in rows) for i in support]
            solved = _solve(normal, rhs)
            if solved is None or any(x < 0 for x in solved):
                continue
            coef = [0.0, 0.0, 0.0]
            for j, x in zip(support, solved, strict=True):
                coef[j] = x
            err = sse(coef)
            if err < best_sse:
                best, best_sse = coef, err
    return ScalingFit(best[0], best[1], best[2], math.sqrt(best_sse / len(rows)))
