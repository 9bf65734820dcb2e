"""A forecast's probability points from the wait history's spread (`wait_points`)."""

from __future__ import annotations

from gateway.scheduling.prediction.wait_points import wait_points

DECILES = tuple((p / 10, p * 100.0) for p in range(1, 10))  # 100, 200, ... 900 s


def test_without_a_spread_the_points_are_the_median_and_the_bound() -> None:
    assert wait_points((), 1.0, 30.0, (0.95, 40.0)) == ((0.5, 30.0), (0.95, 40.0))
    assert wait_points((), 1.0, 40.0, (0.95, 40.0)) == ((0.95, 40.0),)  # equal: p 0.95


def test_the_median_stands_for_the_middle_and_the_others_keep_their_side() -> None:
    # The median (450 s) replaces the spread's 0.5 point; deciles below it stay below
    # it, those above stay between it and the bound (700 s), equal waits fold upwards.
    points = wait_points(DECILES, 1.0, 450.0, (0.95, 700.0))
    assert points == ((0.1, 100.0), (0.2, 200.0), (0.3, 300.0), (0.4, 400.0), (0.5, 450.0),
                      (0.6, 600.0), (0.95, 700.0))
    low = wait_points(DECILES, 1.0, 150.0, (0.95, 700.0))  # a median from another class
    assert low == ((0.1, 100.0), (0.5, 150.0), (0.6, 600.0), (0.95, 700.0))
    high = wait_points(DECILES, 1.0, 800.0, (0.95, 800.0))  # floored by the live queue
    assert high == ((0.1, 100.0), (0.2, 200.0), (0.3, 300.0), (0.4, 400.0), (0.95, 800.0))


def test_routed_outcomes_scale_the_deciles_as_they_scale_the_median() -> None:
    points = wait_points(((0.1, 99.0), (0.9, 999.0)), 2.0, 1000.0, (0.95, 3000.0))
    assert points == ((0.1, 199.0), (0.5, 1000.0), (0.9, 1999.0), (0.95, 3000.0))
