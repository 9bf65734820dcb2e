"""Stream counts for large copies (adapters.ssh.openssh.stream_plan): from the measured round
trip and the rate copies have shown, within the bounds."""

from __future__ import annotations

import pytest

from adapters.ssh.openssh.stream_plan import CHANNEL_WINDOW, StreamPlan

MB = 1e6


def test_a_lan_keeps_the_lower_bound_and_a_wan_asks_for_more() -> None:
    plan = StreamPlan(2, 8)
    assert plan.streams(None) == 2  # not measured
    assert plan.streams(0.0003) == 2  # a LAN: one window covers any rate
    assert plan.streams(0.020) == 8  # rate unknown: as many as the bound allows
    assert plan.streams(0.080) == 8


def test_a_copy_held_by_the_link_sets_the_rate() -> None:
    plan = StreamPlan(2, 16)
    # 8 streams at 80 ms allow 8 x 2 MiB / 0.08 s = 210 MB/s; the copy moved 25 MB/s.
    plan.observe(int(250 * MB), 10.0, 8, 0.080)
    assert plan.rate == pytest.approx(25 * MB)
    # 2 x 25 MB/s x 0.08 s = 4 MB in flight: two windows.
    assert plan.streams(0.080) == 2
    assert plan.streams(0.200) == 5  # 10 MB over 2 MiB windows


def test_a_copy_that_filled_its_windows_says_the_link_takes_more() -> None:
    plan = StreamPlan(1, 16)
    plan.observe(int(250 * MB), 10.0, 8, 0.080)  # link-bound at 25 MB/s
    assert plan.streams(0.080) == 2
    # Two streams allow 52 MB/s; a copy moving 40 MB/s filled them: more than thought.
    plan.observe(int(400 * MB), 10.0, 2, 0.080)
    assert plan.rate is None
    assert plan.streams(0.080) == 16
    # Filling windows when nothing was known changes nothing.
    plan.observe(int(2500 * MB), 10.0, 16, 0.080)  # 250 of the 419 MB/s allowed
    assert plan.rate is None


def test_bounds_are_checked() -> None:
    with pytest.raises(ValueError):
        StreamPlan(0, 4)
    with pytest.raises(ValueError):
        StreamPlan(5, 4)
    assert StreamPlan(3, 3).streams(1.0) == 3
    assert CHANNEL_WINDOW == 2 << 20
