"""Boosted trees for the conditional median (pure Python): what they fit, and how."""

from __future__ import annotations

import random

import pytest

from gateway.scheduling.prediction.boosted_trees import _edges, fit_boosted_trees


def test_a_step_is_fitted_at_its_medians_whatever_the_outliers() -> None:
    rng = random.Random(1)
    rows, targets = [], []
    for _ in range(2000):
        x = rng.uniform(0.0, 100.0)
        y = 1.0 if x < 50.0 else 5.0
        # One target in ten far above: a mean would be pulled up, the median is not.
        rows.append((x, rng.uniform(0.0, 1.0)))
        targets.append(y + 1000.0 if rng.random() < 0.1 else y + rng.gauss(0.0, 0.1))
    model = fit_boosted_trees(rows, targets)
    assert model.predict((10.0, 0.5)) == pytest.approx(1.0, abs=0.15)
    assert model.predict((90.0, 0.5)) == pytest.approx(5.0, abs=0.15)


def test_two_features_together_are_learnt() -> None:
    # High only where both are high (a big job in the evening, say).
    rows = [(float(a), float(b)) for a in range(10) for b in range(10) for _ in range(20)]
    targets = [3.0 if a >= 5 and b >= 5 else -3.0 for a, b in rows]
    model = fit_boosted_trees(rows, targets)
    assert model.predict((8.0, 8.0)) == pytest.approx(3.0, abs=0.3)
    assert model.predict((1.0, 8.0)) == pytest.approx(-3.0, abs=0.3)
    assert model.predict((8.0, 1.0)) == pytest.approx(-3.0, abs=0.3)


def test_a_fit_is_the_same_each_time_and_a_constant_feature_is_never_split() -> None:
    rng = random.Random(2)
    rows = [(rng.uniform(0, 10), 7.0) for _ in range(500)]
    targets = [x * x for x, _ in rows]
    first, second = fit_boosted_trees(rows, targets), fit_boosted_trees(rows, targets)
    assert first == second
    assert all(feature != 1 for tree in first.trees for feature in tree.feature)
    assert first.predict((9.0, 7.0)) > first.predict((1.0, 7.0))


def test_no_leaf_holds_fewer_rows_than_asked() -> None:
    rows = [(float(x),) for x in range(100)]
    targets = [0.0] * 99 + [50.0]  # only the last row differs: too few for a leaf
    model = fit_boosted_trees(rows, targets, min_leaf=20)
    cuts = {cut for tree in model.trees
            for feature, cut in zip(tree.feature, tree.threshold, strict=True) if feature >= 0}
    assert cuts and min(cuts) >= 19.5 and max(cuts) <= 79.5  # 20 rows each side at least
    assert model.predict((99.0,)) == 0.0  # the one row apart never moves a median


def test_bins_keep_a_frequent_value_to_itself() -> None:
    values = [-1.0] * 600 + [float(x) for x in range(400)]
    edges = _edges(values, 8)
    assert len(edges) <= 7
    assert edges[0] == -0.5  # -1 (unknown, 60% of rows) is a bin of its own
    few = _edges([3.0, 1.0, 2.0, 1.0], 8)
    assert few == [1.5, 2.5]  # fewer values than bins: one bin each, edges midway


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="one target per row"):
        fit_boosted_trees([], [])
    with pytest.raises(ValueError, match="one target per row"):
        fit_boosted_trees([(1.0,)], [1.0, 2.0])


def test_any_float_is_a_threshold_or_an_output() -> None:
    # A feature may be unbounded (no start found: inf): the model holds it as it is.
    rows = [(float("inf") if x % 2 else float(x),) for x in range(200)]
    targets = [1e300 if x % 2 else -2.5 for x in range(200)]
    model = fit_boosted_trees(rows, targets)
    assert model.predict((float("inf"),)) > 1e299
    assert model.predict((4.0,)) == pytest.approx(-2.5)
