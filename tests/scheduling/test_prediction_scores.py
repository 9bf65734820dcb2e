"""The prediction evaluation: how a method is scored, its baselines, and production's
forecast walked over a log (SWF lines as the shared traces' README gives the fields)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from gateway.scheduling.evaluation.federation.replay_check import replay_against_log
from gateway.scheduling.evaluation.forecast_eval import evaluate_forecasts
from gateway.scheduling.evaluation.prediction_scores import (
    CLASS_MINIMUM,
    RollingBaseline,
    RollingConformal,
    Tally,
    job_class,
)
from gateway.scheduling.swf import SwfJob, parse_job


def swf(number: int, submit: int, wait: int, run: int, procs: int, requested: int,
        user: int = 1, requested_procs: int | None = None) -> SwfJob:
    asked = procs if requested_procs is None else requested_procs
    fields = f"{number} {submit} {wait} {run} {procs} -1 -1 {asked} {requested} -1 1 {user}"
    return parse_job(fields + " 1 1 1 -1 -1 -1")


def test_rolling_baseline_median_and_p95_by_rank() -> None:
    rolling = RollingBaseline(window=20)
    for wait in range(40):  # the window keeps 20..39
        rolling.observe(3, float(wait))
    assert rolling.predict(2) == (30.0, 39.0)  # 2 and 3 share the log2 bucket 1
    assert rolling.predict(4) is None
    assert rolling.quantile(3, 1.2) == 39.0 and rolling.quantile(3, -0.1) == 20.0


def test_tally_counts_missing_predictions_as_misses() -> None:
    tally = Tally()
    tally.score(100.0, None, None)
    tally.score(100.0, 650.0, 50.0)  # 550 s off: within 10 min, above the bound
    tally.score(100.0, 4000.0, 5000.0)  # 65 min off, under the bound
    report = tally.report()
    assert report["predicted"] == 2
    third = pytest.approx(1 / 3, abs=1e-4)
    assert (report["within_10min"], report["within_1h"]) == (third, third)
    # Two bounds given, one held: the share is over every job, the width over bounds.
    assert report["under_bound"] == third and report["median_bound_width_s"] == 2525.0


def test_long_waits_are_scored_apart() -> None:
    tally = Tally()
    tally.score(1000.0, 0.0, None)  # "it starts now": never within 2x of a long wait
    tally.score(1000.0, 1900.0, None)  # within 2x
    tally.score(1000.0, None, None)  # no point: a miss, its log error infinite
    tally.score(100.0, 100.0, None)  # a short wait: not among the long ones
    long = tally.report()["waited_over_10min"]
    assert long["jobs"] == 3 and long["within_2x"] == pytest.approx(1 / 3, abs=1e-4)
    assert long["median_abs_log_error"] == round(math.log(1001), 3)
    assert "under_bound" not in tally.report()  # no bound was ever given


def test_coverage_is_reported_per_class_of_enough_jobs() -> None:
    tally = Tally()
    small, large = job_class(1, 600.0), job_class(64, 86400.0)
    for i in range(CLASS_MINIMUM):
        tally.score(10.0, 0.0, 20.0, small)  # always covered
        tally.score(10.0, 0.0, 20.0 if i % 10 else 5.0, large)  # 90% covered
    tally.score(10.0, 0.0, 5.0, job_class(4, 60.0))  # one job: too few to report
    report = tally.report()
    assert report["classes"] == {"size 0 x limit 3": 1.0, "size 6 x limit 10": 0.9}
    assert report["worst_class"] == {"class": "size 6 x limit 10", "jobs": CLASS_MINIMUM,
                                     "under_bound": 0.9}


def test_rolling_conformal_raises_its_level_after_misses() -> None:
    rolling = RollingBaseline(window=100)
    for wait in range(100):
        rolling.observe(1, float(wait))
    conformal = RollingConformal(rolling, step=0.01)
    assert conformal.bound(1) == 95.0
    conformal.observe(200.0, conformal.bound(1))  # a miss: level + 0.01 * 0.95
    assert conformal.level == pytest.approx(0.9595)
    assert conformal.bound(1) == 95.0
    for _ in range(5):
        conformal.observe(200.0, 95.0)
    assert conformal.bound(1) == 99.0  # the level passed 1: the largest wait
    conformal.observe(0.0, None)  # no bound was given: nothing learnt
    assert conformal.level == pytest.approx(0.95 + 6 * 0.0095)


def test_idle_machine_every_method_predicts_no_wait() -> None:
    # 100 one-processor jobs, one every 100 s, each running 10 s with no wait on 4 processors.
    result = evaluate_forecasts([swf(i, 100 * i, 0, 10, 1, 60) for i in range(100)], 4)
    for method in ("combined", "likely", "zero_wait", "easy_walltime"):
        assert result[method]["within_10min"] == 1.0
    assert result["combined"]["under_bound"] == 1.0
    # The rolling baseline answers from the first known wait on (job 0 has none).
    assert result["rolling"]["predicted"] == 99


def test_processors_are_what_the_job_asked_for() -> None:
    # J0 holds 3 of 4 processors until 1000. J1 asked for 2 (the log says it was given
    # 1): at its submit only the request is known, so the queue cannot start it before
    # 1000, and every method that reads the queue says so.
    jobs = [swf(0, 0, 0, 1000, 3, 1000), swf(1, 10, 990, 10, 1, 60, requested_procs=2)]
    result = evaluate_forecasts(jobs, 4)
    assert result["easy_walltime"]["within_10min"] == 1.0
    assert result["easy_walltime"]["waited_over_10min"]["within_2x"] == 1.0


def test_predictions_are_fed_back_to_the_calibration() -> None:
    # Each job waits a second longer than the one before (and starts before the next
    # submit): a bound read from past waits alone would miss every time (wait i > every
    # earlier wait). The outcomes fed back as the jobs start raise the site's scale until
    # the bounds hold.
    jobs = [swf(i, 100 * i, i, 60, 1, 60) for i in range(200)]
    assert evaluate_forecasts(jobs, 4, site="drift")["history"]["under_bound"] >= 0.8


def test_replay_check_on_a_log_an_easy_machine_produced() -> None:
    # Waits logged from the golden schedule of test_easy (10 processors): replay is exact.
    jobs = [swf(1, 0, 0, 100, 6, 100), swf(2, 1, 99, 50, 6, 50),
            swf(3, 2, 0, 200, 4, 200), swf(4, 3, 147, 10, 2, 10)]
    assert replay_against_log(jobs, 10) == {
        "jobs": 4, "correlation": 1.0, "median_abs_error_s": 0.0,
        "mean_wait_simulated_s": 61.5, "mean_wait_logged_s": 61.5,
    }


def test_replay_check_without_variation_has_no_correlation() -> None:
    jobs = [swf(1, 0, 0, 10, 1, 10), swf(2, 100, 0, 10, 1, 10)]
    result = replay_against_log(jobs, 4)
    assert result["correlation"] is None and result["median_abs_error_s"] == 0.0
    with pytest.raises(ValueError, match="no job"):
        replay_against_log([swf(1, 0, -1, 10, 1, 10)], 4)


def test_the_hindsight_reference_bounds_every_method_on_long_waits() -> None:
    # Jobs that wait 15-45 min behind a 4-processor job: every method has some long waits
    # to score; the hindsight point (each job's nearest point, chosen knowing the wait)
    # is within 2x at least as often as any method, and has no bound of its own.
    jobs = [swf(0, 0, 0, 3000, 4, 3000)]
    jobs += [swf(i, 60 * i, 3000 - 60 * i, 100, 1, 600 + 60 * i) for i in range(1, 40)]
    result = evaluate_forecasts(jobs, 4)
    best = result["hindsight_best_point"]["waited_over_10min"]["within_2x"]
    assert best > 0 and "under_bound" not in result["hindsight_best_point"]
    assert all(scores["waited_over_10min"]["within_2x"] <= best
               for scores in result.values())


def test_the_wait_if_late_is_scored_on_the_jobs_that_waited() -> None:
    # Two of three jobs start at once, the third waits 2 h (held: the queue cannot see
    # why). The median and the likely wait say "now" and miss every job that waited; the
    # wait if late, learnt from the earlier late starts, is within 2x of most of them, as
    # the rolling window's late median is; both are scored on the 2 h jobs only.
    jobs = [swf(i, 100 * i, 7200 if i % 3 == 2 else 0, 60, 1, 600) for i in range(600)]
    result = evaluate_forecasts(jobs, 64)
    assert result["if_late"]["jobs"] == result["combined"]["waited_over_10min"]["jobs"] == 200
    assert result["combined"]["waited_over_10min"]["within_2x"] == 0.0
    assert result["if_late"]["waited_over_10min"]["within_2x"] >= 0.8
    assert result["rolling_if_late"]["waited_over_10min"]["within_2x"] >= 0.8


def test_the_wait_if_late_learns_what_the_classes_cannot_see() -> None:
    # Alike jobs, one every 10 min for 3 weeks; those submitted before noon wait 1 h,
    # the others 8 h. Every class mixes both; the late-wait model, given the site's
    # clock, learns the hour once 500 late waits are known (fed as production feeds it).
    def clock(seconds: float) -> datetime:
        return datetime.fromtimestamp(seconds, UTC)

    jobs = [swf(i, 600 * i, 3600 if clock(600 * i).hour < 12 else 28800, 60, 1, 600)
            for i in range(3000)]
    result = evaluate_forecasts(jobs, 64, clock=clock)
    learned = result["if_late"]["waited_over_10min"]["within_2x"]
    by_class = result["class_if_late"]["waited_over_10min"]["within_2x"]
    assert result["if_late"]["jobs"] == result["class_if_late"]["jobs"] == 3000
    assert by_class < 0.5 and learned > 0.8
    # Without the clock, only the queue's length (longer in the evening) tells them apart.
    blind = evaluate_forecasts(jobs, 64)["if_late"]["waited_over_10min"]["within_2x"]
    assert by_class < blind < learned - 0.1


def test_a_chance_is_scored_by_its_squared_error_and_a_missing_one_as_the_worst() -> None:
    tally = Tally()
    tally.score_chance(0.0, 0.9)  # started at once: (0.9 - 1)^2
    tally.score_chance(3600.0, 0.9)  # waited an hour: (0.9 - 0)^2
    tally.score_chance(600.0, None)  # within 10 min, no chance given: counted as 1
    assert tally.report()["start_within_10min_brier"] == round((0.01 + 0.81 + 1.0) / 3, 4)
    assert "start_within_10min_brier" not in Tally().report()


def test_the_chance_of_starting_within_10_min_beats_certainty_when_a_third_wait() -> None:
    # The jobs of the test above: a third wait 2 h. "It starts now" is certain and wrong
    # for a third (Brier 1/3); the history's spread says about two in three and scores
    # at least as well as the rolling window's share (0.239 against 0.246; a straight
    # line between the median and the bound gave 0.248).
    jobs = [swf(i, 100 * i, 7200 if i % 3 == 2 else 0, 60, 1, 600) for i in range(600)]
    result = evaluate_forecasts(jobs, 64)
    brier = {name: result[name]["start_within_10min_brier"]
             for name in ("combined", "rolling", "zero_wait")}
    assert brier["zero_wait"] == pytest.approx(1 / 3, abs=1e-3)
    assert brier["combined"] <= brier["rolling"] < 0.25, brier
