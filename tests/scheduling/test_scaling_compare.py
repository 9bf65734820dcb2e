"""Side-by-side held-out comparison of scaling models (no Extra-P needed)."""

from __future__ import annotations

import math

import pytest

from gateway.scheduling.evaluation.scaling_compare import (
    linear_scaling_predictor,
    paired_mape,
    target,
)
from gateway.scheduling.evaluation.scaling_eval import (
    HeldOut,
    Split,
    evaluate,
    extrapolate_splits,
    gridgate_predictor,
    held_out,
    leave_one_out,
    leave_one_out_splits,
)

PROCS = [1, 2, 4, 8, 16]
TIMES = [100.0, 52.0, 27.0, 15.0, 9.0]


def test_leave_one_out_splits_hold_out_each_count_once() -> None:
    splits = leave_one_out_splits(PROCS, TIMES)
    assert [s.test_procs for s in splits] == [(p,) for p in PROCS]
    for split in splits:
        (p,) = split.test_procs
        assert p not in split.train_procs
        assert sorted(split.train_procs + split.test_procs) == PROCS
        assert dict(zip(split.train_procs, split.train_times, strict=True)) == {
            q: t for q, t in zip(PROCS, TIMES, strict=True) if q != p
        }
    assert leave_one_out_splits(PROCS[:3], TIMES[:3]) == []


def test_extrapolate_split_trains_on_the_smallest_counts_in_any_order() -> None:
    (split,) = extrapolate_splits(list(reversed(PROCS)), list(reversed(TIMES)))
    assert split == Split((1, 2, 4), (100.0, 52.0, 27.0), (8, 16), (15.0, 9.0))
    assert extrapolate_splits(PROCS[:3], TIMES[:3]) == []


def test_held_out_pairs_predictions_in_order_and_refuses_a_mismatch() -> None:
    splits = extrapolate_splits(PROCS, TIMES)
    assert held_out(splits, [[14.0, 10.0]]) == [HeldOut(8, 15.0, 14.0), HeldOut(16, 9.0, 10.0)]
    with pytest.raises(ValueError, match="1 predictions for 2 held-out counts"):
        held_out(splits, [[14.0]])
    with pytest.raises(ValueError):
        held_out(splits, [[14.0, 10.0], [1.0, 2.0]])  # one split, two answers


def test_evaluate_with_the_gridgate_predictor_is_the_protocol() -> None:
    assert evaluate(leave_one_out_splits(PROCS, TIMES), gridgate_predictor) == leave_one_out(
        PROCS, TIMES
    )


def test_linear_scaling_from_the_nearest_count_on_a_log_scale() -> None:
    # 4 is as far from 2 as from 8 on a log scale: the smaller count wins the tie; 64
    # scales from 8; the two runs at 2 are averaged.
    got = linear_scaling_predictor([1, 2, 2, 8], [100.0, 50.0, 54.0, 20.0], [4, 64, 3])
    assert got == pytest.approx([52.0 * 2 / 4, 20.0 * 8 / 64, 52.0 * 2 / 3])
    with pytest.raises(ValueError, match="no training points"):
        linear_scaling_predictor([], [], [4])


def test_paired_mape_refuses_sides_on_different_points() -> None:
    ours = [HeldOut(8, 15.0, 12.0), HeldOut(16, 9.0, 9.9)]
    theirs = [HeldOut(8, 15.0, 15.0), HeldOut(16, 9.0, math.inf)]
    figures = paired_mape({"ours": ours, "theirs": theirs})
    assert figures["ours"].mape_pct == pytest.approx((20.0 + 10.0) / 2)
    assert figures["ours"].predictions == 2 and figures["ours"].non_finite == 0
    assert figures["theirs"].mape_pct == math.inf and figures["theirs"].non_finite == 1
    with pytest.raises(ValueError, match="'other' predicted other points than 'ours'"):
        paired_mape({"ours": ours, "other": [HeldOut(8, 15.0, 12.0)]})
    with pytest.raises(ValueError, match="other points"):
        paired_mape({"ours": ours, "other": [HeldOut(8, 15.0, 1.0), HeldOut(32, 9.0, 1.0)]})
    assert paired_mape({}) == {}


@pytest.mark.parametrize(
    ("ours", "theirs", "no_worse", "within", "met"),
    [
        (10.0, 12.0, True, True, True),
        (13.0, 12.0, False, True, False),  # within 15% but worse than the tool
        (16.0, 14.0, False, False, False),  # the tool reaches 15%, ours does not
        (20.0, 30.0, True, None, True),  # neither reaches 15%: only "no worse" counts
        (12.0, math.inf, True, True, True),
        (None, 12.0, False, None, False),
    ],
)
def test_target(
    ours: float | None, theirs: float | None, no_worse: bool, within: bool | None, met: bool
) -> None:
    check = target(ours, theirs, 15.0)
    assert (check.no_worse, check.within_limit, check.met) == (no_worse, within, met)
