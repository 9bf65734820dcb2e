"""Held-out evaluation of the scaling fit on measured runtime series (pure: no I/O).

A series is one application and problem size on one machine: processor counts and the
runtimes measured there. Two protocols, both predicting counts the fit never saw:

- leave-one-out: each count in turn is held out, the model fitted on the others;
- extrapolation: fitted on the `k` smallest counts, predicting every larger one (what a
  router does when a user asks for more processors than they have run on before).

A series enters a protocol only when the fit still has three distinct counts after
holding out, i.e. at least four counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gateway.scheduling.scaling_fit import MIN_COUNTS, fit_scaling


@dataclass(frozen=True)
class HeldOut:
    """One held-out prediction: its processor count, measured and predicted runtime."""

    procs: float
    measured: float
    predicted: float

    @property
    def abs_pct_error(self) -> float:
        """|predicted - measured| / measured, in percent."""
        return abs(self.predicted - self.measured) / self.measured * 100.0


def leave_one_out(procs: Sequence[float], times: Sequence[float]) -> list[HeldOut]:
    """Hold out each count in turn; [] for a series with fewer than four counts."""
    if len(set(procs)) <= MIN_COUNTS:
        return []
    out = []
    for i, (p, t) in enumerate(zip(procs, times, strict=True)):
        rest_p = [q for j, q in enumerate(procs) if j != i]
        rest_t = [s for j, s in enumerate(times) if j != i]
        out.append(HeldOut(p, t, fit_scaling(rest_p, rest_t).predict(p)))
    return out


def extrapolate(
    procs: Sequence[float], times: Sequence[float], k: int = MIN_COUNTS
) -> list[HeldOut]:
    """Fit on the `k` smallest counts, predict the larger ones; [] if none is left over."""
    order = sorted(zip(procs, times, strict=True))
    train, test = order[:k], order[k:]
    if not test:
        return []
    fit = fit_scaling([p for p, _ in train], [t for _, t in train])
    return [HeldOut(p, t, fit.predict(p)) for p, t in test]


def mape(predictions: Iterable[HeldOut]) -> float | None:
    """Mean absolute percentage error, None when there is nothing to average."""
    errors = [h.abs_pct_error for h in predictions]
    return sum(errors) / len(errors) if errors else None
