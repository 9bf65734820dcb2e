"""SiteForecaster: per-site forecasts from queue profiles, histories and staging."""

from __future__ import annotations

import dataclasses
import random
from datetime import UTC, datetime

import pytest

from gateway.scheduling.forecaster import HISTORY, PROJECTION, SiteForecaster
from gateway.scheduling.prediction.late_waits import LATE_FEATURES, LateWaits
from gateway.scheduling.prediction.runtime_predictor import RuntimePredictor
from gateway.scheduling.prediction.staging_estimate import TransferRates
from gateway.scheduling.prediction.wait_predictor import JobClass, WaitPredictor
from gateway.scheduling.queues.queue_state import QueueState
from gateway.scheduling.ranking import Candidate, route_pass
from gateway.scheduling.routing_inputs import JobNeed, SiteState

# Site a: the queue of test_queue_profile (10 processors; A running, B and C queued).
# Likely profile: 0: 2 free, 30: 4, 100: 2, 150: 10.
# Walltime profile (limits): 0: 2 free, 40: 4, 200: 2, 300: 10.
SITE_A = SiteState("a", QueueState(10, running=((6, 100.0, 200.0),),
                                   queued=((8, 50.0, 100.0), (2, 30.0, 40.0))))
JOB = JobNeed("u", "app", 4, 100.0)


def runtimes_of_60s() -> RuntimePredictor:
    runs = RuntimePredictor()
    runs.observe("u", "app", "a", 4, 50.0)
    runs.observe("u", "app", "a", 4, 70.0)
    return runs


def test_without_history_the_live_queue_gives_median_and_bound() -> None:
    forecaster = SiteForecaster([SITE_A], WaitPredictor(), runtimes_of_60s())
    forecast = forecaster.forecast(JOB, "a")
    # Run time 60 s (mean of 50 and 70). Likely: 4 free from 30 until 100 >= 30 + 60.
    # Walltime: 4 free from 40 until 200 >= 40 + 100 (the limit).
    assert (forecast.wait_median, forecast.wait_bound, forecast.runtime) == (30.0, 40.0, 60.0)
    assert forecast.staging == 0.0
    assert forecast.wait_quantiles == ((0.5, 30.0), (0.95, 40.0))
    assert forecast.basis == ("live queue (no wait history); "
                              "run time: last 2 runs at 4 processors")
    # The walltime projection travels with the forecast: the class the wait is kept in.
    assert forecast.projected_wait == forecaster.job_class(JOB, "a").projected_wait == 40.0


def test_bound_never_below_median() -> None:
    # No runs: the job runs its limit, 100 s. Likely: the 30-100 hole is too short
    # (4 free only from 150); walltime: 40 (the 40-200 hole holds 100 s). Bound = median.
    forecast = SiteForecaster([SITE_A], WaitPredictor(), RuntimePredictor()).forecast(JOB, "a")
    assert (forecast.wait_median, forecast.wait_bound) == (150.0, 150.0)
    assert forecast.p_start_within(150.0) == pytest.approx(0.95)


def history_for_a() -> WaitPredictor:
    waits = WaitPredictor()
    rng = random.Random(3)
    for _ in range(100):
        # The job's projection (40 s) is in the under-a-minute projection class.
        waits.observe(JobClass("a", "", 4, 100.0, 40.0), float(rng.randint(0, 900)))
    return waits


def test_history_conditioned_on_the_projection_wins_when_long_enough() -> None:
    waits = history_for_a()
    forecast = SiteForecaster([SITE_A], waits, runtimes_of_60s()).forecast(JOB, "a")
    expected = waits.predict(JobClass("a", "", 4, 100.0, 40.0))
    assert expected is not None and expected.level == "site/projection/limit"
    assert (forecast.wait_median, forecast.wait_bound) == (expected.median,
                                                           expected.upper_bound)
    assert forecast.basis.startswith("history site/projection/limit (100 waits) + live queue;")


def test_history_conditioned_on_the_projection_is_floored_too() -> None:
    # Jobs projected alike started within 10 s, but this queue cannot start the job
    # before 30 s (its own pass may have filled it): the history lags, the queue floors.
    waits = WaitPredictor()
    for wait in range(100):
        waits.observe(JobClass("a", "", 4, 100.0, 40.0), float(wait % 10))
    forecast = SiteForecaster([SITE_A], waits, runtimes_of_60s()).forecast(JOB, "a")
    assert forecast.wait_median == 30.0 and forecast.wait_bound >= 30.0
    assert forecast.basis.startswith(
        "history site/projection/limit (100 waits) + live queue, floored by the live queue;")
    # What is given back to calibrate the bounds is the class's own bound, not the floor.
    expected = waits.predict(JobClass("a", "", 4, 100.0, 40.0))
    assert expected is not None and expected.upper_bound < 30.0
    assert forecast.class_bound == expected.upper_bound


def test_the_chances_are_the_historys_while_the_queue_floors_the_median() -> None:
    # The history above (waits of 0-9 s, ten each) and a queue that cannot start the job
    # before 30 s: the median and the bound are 30 s, but P(start within t) below them is
    # read from the history's deciles (rank ceil(p 101): 1, 2, 3, 4 s): a floor under
    # every point made chances worse than a rolling window's share on three of the four
    # shared logs. The deciles at or above the median fold into the bound.
    waits = WaitPredictor()
    for wait in range(100):
        waits.observe(JobClass("a", "", 4, 100.0, 40.0), float(wait % 10))
    forecast = SiteForecaster([SITE_A], waits, runtimes_of_60s()).forecast(JOB, "a")
    assert (forecast.wait_median, forecast.wait_bound) == (30.0, 30.0)
    assert forecast.wait_quantiles == ((0.1, 1.0), (0.2, 2.0), (0.3, 3.0), (0.4, 4.0),
                                       (0.95, 30.0))
    assert forecast.p_start_within(4.0) == 0.4 and forecast.p_start_within(30.0) == 0.95


def test_modes_history_alone_and_projection_alone() -> None:
    waits = history_for_a()
    alone = SiteForecaster([SITE_A], waits, runtimes_of_60s(), mode=HISTORY).forecast(JOB, "a")
    assert alone.basis.startswith("history site/queue/size/limit (100 waits);")
    live = SiteForecaster([SITE_A], waits, runtimes_of_60s(), mode=PROJECTION).forecast(JOB, "a")
    assert (live.wait_median, live.wait_bound) == (30.0, 40.0)
    with pytest.raises(ValueError, match="unknown forecast mode"):
        SiteForecaster([SITE_A], waits, runtimes_of_60s(), mode="guess")


def test_commit_is_seen_by_the_next_forecast() -> None:
    empty = SiteState("e", QueueState(4))
    forecaster = SiteForecaster([empty], WaitPredictor(), RuntimePredictor())
    whole = JobNeed("u", "app", 4, 100.0)
    assert forecaster.forecast(whole, "e").wait_median == 0.0
    forecaster.commit(whole, "e")
    second = forecaster.forecast(JobNeed("v", "app", 4, 100.0), "e")
    assert (second.wait_median, second.wait_bound) == (100.0, 100.0)


def test_staging_uses_rates_and_the_site_cache() -> None:
    sites = [SiteState("a", QueueState(4)), SiteState("b", QueueState(4)),
             SiteState("c", QueueState(4), cached=frozenset({"upload:1"}))]
    rates = TransferRates(defaults={"a": 100e6, "b": 100e6, "c": 100e6})
    job = JobNeed("u", "app", 1, 60.0, inputs=(("upload:1", 500_000_000),
                                               ("site://b/in", 100_000_000)))
    forecaster = SiteForecaster(sites, WaitPredictor(), RuntimePredictor(), rates)
    # a: both move (5 s + 1 s); b: its own file stays (5 s); c: the upload is cached (1 s).
    assert [forecaster.forecast(job, s).staging for s in "abc"] == pytest.approx([6, 5, 1])


def test_route_pass_spreads_jobs_that_see_each_other() -> None:
    sites = [SiteState("a", QueueState(4)), SiteState("b", QueueState(4))]
    forecaster = SiteForecaster(sites, WaitPredictor(), RuntimePredictor())
    jobs = [JobNeed("u", "app", 4, 100.0, key=str(i)) for i in range(3)]
    routed = route_pass(jobs, lambda job: [Candidate("a"), Candidate("b")], forecaster,
                        lambda job: ("fastest", 1, None))
    # Equal forecasts break on the name: a; then a is busy to 100 and b is idle: b;
    # then both free at 100: a again.
    assert [r.decision.chosen for r in routed] == [("a",), ("b",), ("a",)]
    assert forecaster.forecast(jobs[0], "a").wait_median == 200.0


def test_coarse_history_is_floored_by_the_live_queue() -> None:
    # Waits known only without a projection (coarse classes): 100 waits of 5 s.
    waits = WaitPredictor()
    for _ in range(100):
        waits.observe(JobClass("a", "", 4, 100.0, None), 5.0)
    forecast = SiteForecaster([SITE_A], waits, runtimes_of_60s()).forecast(JOB, "a")
    # The live queue cannot start the job before 30 s: the history's 5 s is floored.
    assert (forecast.wait_median, forecast.wait_bound) == (30.0, 30.0)
    assert forecast.basis.startswith(
        "history site/queue/size/limit (100 waits), floored by the live queue;")
    alone = SiteForecaster([SITE_A], waits, runtimes_of_60s(), mode=HISTORY).forecast(JOB, "a")
    assert (alone.wait_median, alone.wait_bound) == (5.0, 5.0)
    idle = SiteForecaster([SiteState("a", QueueState(10))], waits, runtimes_of_60s())
    assert idle.forecast(JOB, "a").wait_median == 5.0  # an idle queue leaves it be


def test_bad_needs_and_oversized_jobs_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one processor"):
        JobNeed("u", "app", 0, 60.0)
    with pytest.raises(ValueError, match="time limit must be positive"):
        JobNeed("u", "app", 1, float("nan"))
    forecaster = SiteForecaster([SITE_A], WaitPredictor(), RuntimePredictor())
    with pytest.raises(ValueError, match="1 to 10 processors"):
        forecaster.forecast(JobNeed("u", "app", 11, 60.0), "a")


def test_the_class_to_record_a_wait_in_and_the_prediction_to_give_back() -> None:
    waits = history_for_a()
    forecaster = SiteForecaster([SITE_A], waits, runtimes_of_60s())
    # The walltime projection (40 s) and the user key the class, as the forecast used it.
    assert forecaster.job_class(JOB, "a") == JobClass("a", "", 4, 100.0, 40.0, "u")
    assert forecaster.wait_prediction(JOB, "a") == waits.predict(forecaster.job_class(JOB, "a"))
    history_alone = SiteForecaster([SITE_A], waits, runtimes_of_60s(), mode=HISTORY)
    assert history_alone.job_class(JOB, "a").projected_wait is None
    assert SiteForecaster([SITE_A], WaitPredictor(), runtimes_of_60s()).wait_prediction(
        JOB, "a") is None
    # The forecast carries that class's bound, to give back (None where no history
    # answered: the live queue's bound is not calibrated).
    given = forecaster.wait_prediction(JOB, "a")
    assert given is not None
    assert forecaster.forecast(JOB, "a").class_bound == given.upper_bound
    assert SiteForecaster([SITE_A], WaitPredictor(), runtimes_of_60s()).forecast(
        JOB, "a").class_bound is None


def test_the_wait_if_late_is_the_late_wait_model_s_once_it_has_fitted() -> None:
    waits = history_for_a()
    late = LateWaits(minimum=40)
    evening = datetime(2026, 12, 4, 19, 30, tzinfo=UTC)  # a Friday
    site = dataclasses.replace(SITE_A, local_time=evening)
    forecaster = SiteForecaster([site], waits, runtimes_of_60s(), late=late)
    before = forecaster.forecast(JOB, "a")
    assert before.late_features is not None
    known = dict(zip(LATE_FEATURES, before.late_features, strict=True))
    # The queue's load, the forecast's own points and the site's clock, as they were.
    assert (known["queued_jobs"], known["running_jobs"], known["busy_processors"]) == (
        2.0, 1.0, 6.0)
    assert (known["queued_work"], known["running_work_left"]) == (8 * 50 + 2 * 30, 6 * 100)
    assert known["wait_median"] == before.wait_median
    assert (known["hour"], known["weekday"]) == (19.0, 4.0)
    class_median = waits.predict(JobClass("a", "", 4, 100.0, 40.0))
    assert class_median is not None and before.wait_if_late == class_median.if_late
    for n in range(40):  # jobs like it, known to have waited 5 h once they started
        late.observe("a", n, before.late_features, 5 * 3600.0)
    after = SiteForecaster([site], waits, runtimes_of_60s(), late=late).forecast(JOB, "a")
    assert after.wait_if_late == pytest.approx(5 * 3600.0, rel=0.01)
    assert after.wait_median == before.wait_median  # routing reads nothing of it
    # The other modes are the evaluation's: no model is asked or fed there.
    forecaster = SiteForecaster([site], waits, runtimes_of_60s(), mode=HISTORY, late=late)
    assert forecaster.forecast(JOB, "a").late_features is None
