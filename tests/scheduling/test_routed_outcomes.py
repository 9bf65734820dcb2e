"""Routed outcomes: a site whose forecasts proved optimistic loses its pull at once."""

from __future__ import annotations

import math

import pytest

from gateway.scheduling.forecaster import SiteForecaster
from gateway.scheduling.prediction.routed_outcomes import WINDOW, RoutedOutcomes
from gateway.scheduling.prediction.runtime_predictor import RuntimePredictor
from gateway.scheduling.prediction.wait_predictor import WaitPredictor
from gateway.scheduling.queues.queue_state import QueueState
from gateway.scheduling.routing_inputs import JobNeed, SiteState


def test_the_factor_is_the_median_ratio_once_half_a_window_is_known() -> None:
    outcomes = RoutedOutcomes(window=4)
    outcomes.observe("a", median=99.0, wait=399.0)  # (1 + 399) / (1 + 99) = 4
    assert outcomes.factor("a") == 1.0  # one outcome is not yet evidence
    outcomes.observe("a", median=99.0, wait=199.0)  # 2
    assert outcomes.factor("a") == pytest.approx(math.sqrt(8))  # median of log 4, log 2
    assert outcomes.factor("b") == 1.0


def test_the_factor_only_backs_off_and_forgets_beyond_its_window() -> None:
    outcomes = RoutedOutcomes(window=3)
    for _ in range(3):
        outcomes.observe("a", median=999.0, wait=0.0)  # forecasts too long: no speed-up
    assert outcomes.factor("a") == 1.0
    for _ in range(3):
        outcomes.observe("a", median=0.0, wait=9.0)  # waited 10x longer than forecast
    assert outcomes.factor("a") == pytest.approx(10.0)
    assert outcomes.outcomes("a") == 3
    with pytest.raises(ValueError):
        RoutedOutcomes(window=0)


def test_the_forecaster_scales_the_median_and_says_why() -> None:
    outcomes = RoutedOutcomes()
    for _ in range(WINDOW):
        outcomes.observe("a", median=0.0, wait=59.0)  # 60x the forecast
    queue = QueueState(8)  # idle: the live queue says the job starts now
    forecaster = SiteForecaster([SiteState("a", queue), SiteState("b", queue)],
                                WaitPredictor(), RuntimePredictor(), outcomes=outcomes)
    job = JobNeed("u", "app", 2, 600.0)
    at_a, at_b = forecaster.forecast(job, "a"), forecaster.forecast(job, "b")
    assert at_a.wait_median == pytest.approx(59.0) and at_a.calibration == pytest.approx(60)
    assert at_a.uncalibrated_median == pytest.approx(0.0)
    assert at_a.wait_bound >= at_a.wait_median
    assert f"x60.0 as the last {WINDOW} jobs routed here waited longer" in at_a.basis
    assert at_b.wait_median == 0.0 and at_b.calibration == 1.0
