"""Held-out evaluation of the scaling fit on measured runtime series (pure: no I/O).

A series is one application and problem size on one machine: processor counts and the
runtimes measured there. Two protocols, both predicting counts the fit never saw:

- leave-one-out: each count in turn is held out, the model fitted on the others;
- extrapolation: fitted on the `k` smallest counts, predicting every larger one (what a
  router does when a user asks for more processors than they have run on before).

A series enters a protocol only when the fit still has three distinct counts after
holding out, i.e. at least four counts. The protocols are first split into `Split`s
(training points and held-out points) so that any model, ours or another tool's, can be
fitted on exactly the same training points and judged on the same held-out ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from gateway.scheduling.prediction.scaling_fit import MIN_COUNTS, fit_scaling


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


@dataclass(frozen=True)
class Split:
    """One fit of a protocol: the points it is trained on and the points it must predict."""

    train_procs: tuple[float, ...]
    train_times: tuple[float, ...]
    test_procs: tuple[float, ...]
    test_times: tuple[float, ...]


# A model under evaluation: trained on (procs, times), it predicts the runtime at each of
# the given counts.
Predictor = Callable[[Sequence[float], Sequence[float], Sequence[float]], list[float]]


def leave_one_out_splits(procs: Sequence[float], times: Sequence[float]) -> list[Split]:
    """One split per count, holding it out; [] for a series with fewer than four counts."""
    if len(set(procs)) <= MIN_COUNTS:
        return []
    pairs = list(zip(procs, times, strict=True))
    return [
        Split(
            tuple(q for j, (q, _) in enumerate(pairs) if j != i),
            tuple(s for j, (_, s) in enumerate(pairs) if j != i),
            (p,),
            (t,),
        )
        for i, (p, t) in enumerate(pairs)
    ]


def extrapolate_splits(
    procs: Sequence[float], times: Sequence[float], k: int = MIN_COUNTS
) -> list[Split]:
    """The one split training on the `k` smallest counts; [] if none is left over."""
    order = sorted(zip(procs, times, strict=True))
    train, test = order[:k], order[k:]
    if not test:
        return []
    return [
        Split(
            tuple(p for p, _ in train),
            tuple(t for _, t in train),
            tuple(p for p, _ in test),
            tuple(t for _, t in test),
        )
    ]


def held_out(splits: Iterable[Split], predicted: Iterable[Sequence[float]]) -> list[HeldOut]:
    """Pair each split's held-out points with a model's predictions for them, in order.

    `predicted` holds one sequence per split (as many values as it has held-out counts);
    a length mismatch raises ValueError rather than pairing a value with the wrong point.
    """
    out: list[HeldOut] = []
    for split, values in zip(splits, predicted, strict=True):
        if len(values) != len(split.test_procs):
            raise ValueError(
                f"{len(values)} predictions for {len(split.test_procs)} held-out counts"
            )
        out.extend(
            HeldOut(p, t, v)
            for p, t, v in zip(split.test_procs, split.test_times, values, strict=True)
        )
    return out


def evaluate(splits: Sequence[Split], predictor: Predictor) -> list[HeldOut]:
    """Fit `predictor` on each split's training points and pair its held-out predictions."""
    return held_out(
        splits, [predictor(s.train_procs, s.train_times, s.test_procs) for s in splits]
    )


def gridgate_predictor(
    train_procs: Sequence[float], train_times: Sequence[float], at: Sequence[float]
) -> list[float]:
    """The production scaling fit (`scaling_fit.fit_scaling`) as a `Predictor`."""
    fit = fit_scaling(train_procs, train_times)
    return [fit.predict(p) for p in at]


def leave_one_out(procs: Sequence[float], times: Sequence[float]) -> list[HeldOut]:
    """Hold out each count in turn; [] for a series with fewer than four counts."""
    return evaluate(leave_one_out_splits(procs, times), gridgate_predictor)


def extrapolate(
    procs: Sequence[float], times: Sequence[float], k: int = MIN_COUNTS
) -> list[HeldOut]:
    """Fit on the `k` smallest counts, predict the larger ones; [] if none is left over."""
    return evaluate(extrapolate_splits(procs, times, k), gridgate_predictor)


def mape(predictions: Iterable[HeldOut]) -> float | None:
    """Mean absolute percentage error, None when there is nothing to average."""
    errors = [h.abs_pct_error for h in predictions]
    return sum(errors) / len(errors) if errors else None
