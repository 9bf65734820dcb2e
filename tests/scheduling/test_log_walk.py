"""Walking a log in time order (what the gateway knows at each instant), and the offline
evaluations built on it: golden values worked out by hand. SWF lines as the shared
traces' README gives the fields."""

from __future__ import annotations

import pytest

from gateway.scheduling.evaluation.forecast_eval import evaluate_forecasts
from gateway.scheduling.evaluation.log_walk import LogWalk, fingerprint
from gateway.scheduling.evaluation.runtime_eval import evaluate_runtimes
from gateway.scheduling.forecaster import MODES
from gateway.scheduling.prediction.wait_predictor import JobClass, WaitPrediction, WaitPredictor
from gateway.scheduling.queues.queue_state import QueueState
from gateway.scheduling.ranking import Forecast
from gateway.scheduling.routing_inputs import JobNeed
from gateway.scheduling.swf import SwfJob, parse_job


def swf(number: int, submit: int, wait: int, run: int, procs: int, requested: int,
        user: int = 1, executable: int = -1) -> SwfJob:
    fields = f"{number} {submit} {wait} {run} {procs} -1 -1 {procs} {requested} -1 1 {user}"
    return parse_job(fields + f" 1 {executable} 1 -1 -1 -1")


def test_fingerprint_is_the_executable_when_known() -> None:
    assert fingerprint(swf(0, 0, 0, 1, 1, 1, executable=17)) == "17"
    assert fingerprint(swf(0, 0, 0, 1, 1, 1)) == ""


def test_queue_and_histories_follow_the_log() -> None:
    started: list[int] = []
    ended: list[int] = []
    walk = LogWalk("s", 8, on_start=lambda j, _: started.append(j.number),
                   on_end=lambda j: ended.append(j.number))
    a = swf(0, 0, 0, 500, 4, 1000)  # runs 0-500
    b = swf(1, 0, 50, 500, 2, 600)  # runs 50-550
    c = swf(2, 10, 890, 100, 8, 200)  # waits until 900
    walk.submit(a, 1000.0, 300.0, JobClass("s", "1", 4, 1000.0, 0.0))
    walk.submit(b, 600.0, 600.0, JobClass("s", "1", 2, 600.0, 0.0))
    walk.advance(10.0)  # a started at 0 (< 10): its wait is known
    walk.submit(c, 200.0, 100.0, JobClass("s", "1", 8, 200.0, 0.0))
    assert started == [0]
    state = walk.state(20.0)
    # a: predicted 300 from its start, limit 1000: 280 and 980 s left at 20.
    assert state.running == ((4, 280.0, 980.0),)
    assert state.queued == ((2, 600.0, 600.0), (8, 100.0, 200.0))
    walk.advance(600.0)  # b started at 50; a ended at 500, b at 550; c still waits
    assert (started, ended) == ([0, 1], [0, 1])
    assert walk.state(600.0).running == ()
    estimate = walk.runtimes.predict("1", "", "s", 4, 3600)
    assert (estimate.seconds, estimate.basis) == (500.0, "last 1 runs at 4 processors")


def test_limit_of_a_job_without_a_request_is_the_longest_seen() -> None:
    walk = LogWalk("s", 8)
    assert walk.limit(swf(0, 0, 0, 30, 1, -1)) == 1.0  # nothing known: not its own run
    assert walk.limit(swf(1, 0, 0, 30, 1, 7200)) == 7200.0
    assert walk.limit(swf(2, 0, 0, 30, 1, -1)) == 7200.0


def test_limit_in_a_log_without_requests_is_the_longest_run_known_at_submit() -> None:
    # J0 runs 0-30 and J1 10-110. J1 asks at 10: J0 has run 10 s so far (its 30 s are
    # known at 30 only); J2 at 50: J0's 30 s ended, J1 has run 40 s; J3 at 200: 100 s.
    walk = LogWalk("s", 8)
    jobs = [swf(0, 0, 0, 30, 1, -1), swf(1, 10, 0, 100, 1, -1), swf(2, 50, 0, 5, 1, -1),
            swf(3, 200, 0, 5, 1, -1)]
    limits = []
    for job in jobs:
        walk.advance(float(job.submit))
        limit = walk.limit(job)
        limits.append(limit)
        walk.submit(job, limit, limit, JobClass("s", "1", 1, limit, 0.0))
    assert limits == [1.0, 10.0, 40.0, 100.0]


def test_forecast_evaluation_scores_modes_and_the_rolling_baseline() -> None:
    # 4 processors. J0 runs 0-100 (limit 200); J1 (all 4) arrives at 10, waits 90.
    # At 10: no runs ended, so J0 is predicted to its limit: 190 s left; J1 is projected
    # to start at 190 in every mode (no history). J0 itself was projected at 0.
    jobs = [swf(0, 0, 0, 100, 4, 200), swf(1, 10, 90, 50, 4, 400)]
    result = evaluate_forecasts(jobs, 4)
    figures = ("jobs", "predicted", "within_10min", "within_1h", "under_bound",
               "median_bound_width_s")

    def scored(method: str) -> tuple[object, ...]:
        return tuple(result[method].get(name) for name in figures)

    for mode in ("combined", "history", "projection", "likely", "easy_walltime"):
        assert scored(mode) == (2, 2, 1.0, 1.0, 1.0, 95.0)
    # "It starts now": right within 10 min for both (0 and 90 s), and no bound.
    assert scored("zero_wait") == (2, 2, 1.0, 1.0, None, None)
    # Rolling: J0 has no known wait; J1 sees J0's 0 s: median and p95 0, under by 90 s.
    assert scored("rolling") == scored("rolling_conformal") == (2, 1, 0.5, 0.5, 0.0, 0)
    # No job waited over 10 min; no class holds 1,000 jobs.
    assert result["combined"]["waited_over_10min"] == {
        "jobs": 0, "within_2x": 0.0, "median_abs_log_error": None}
    assert result["combined"]["classes"] == {} and result["combined"]["worst_class"] is None
    assert evaluate_forecasts(jobs, 4, limit=1)["combined"]["jobs"] == 1


def test_the_forecast_walk_shows_each_job_what_was_known_at_its_submit() -> None:
    seen = []

    def show(job: SwfJob, need: JobNeed, state: QueueState, made: dict[str, Forecast]
             ) -> None:
        seen.append((job.number, need.procs, need.time_limit, state.running, state.queued,
                     {mode: forecast.wait_median for mode, forecast in made.items()}))

    # As above: J1 sees J0 running with 190 s left (predicted: its limit) and is
    # projected to start then in every mode.
    evaluate_forecasts([swf(0, 0, 0, 100, 4, 200), swf(1, 10, 90, 50, 4, 400)], 4,
                       on_forecast=show)
    assert seen == [
        (0, 4, 200.0, (), (), dict.fromkeys(MODES, 0.0)),
        (1, 4, 400.0, ((4, 190.0, 190.0),), (), dict.fromkeys(MODES, 190.0)),
    ]


@pytest.mark.parametrize(("user", "held"), [(7, True), (-1, False)])
def test_only_a_known_user_is_an_account_the_bound_waits_for(user: int, held: bool) -> None:
    # 4 processors. J0 (2 processors) runs 0-1000; J1 (1 processor) waits from 10 to
    # 1000 although 2 are free: its owner runs no more at once. J2 comes at 20 behind
    # it: the same owner's jobs go one at a time, so its bound is raised to when J0 and
    # J1 have run to their limits (2,180 s). A log with no users (-1) records no owner:
    # its jobs are not one account holding the whole queue.
    jobs = [swf(0, 0, 0, 1000, 2, 2000, user), swf(1, 10, 990, 100, 1, 200, user),
            swf(2, 20, 1080, 50, 1, 300, user)]
    told: dict[int, Forecast] = {}
    evaluate_forecasts(jobs, 4, on_forecast=lambda job, _n, _s, made: told.update(
        {job.number: made["combined"]}))
    assert ("bound raised" in told[2].basis) is held
    assert told[2].wait_bound == (2180.0 if held else told[2].wait_median)


def test_the_walk_calibrates_the_class_bounds_it_gave(monkeypatch: pytest.MonkeyPatch
                                                      ) -> None:
    # As production and the simulator do: each job's wait is given back with the bound of
    # its class its forecast gave (`Forecast.class_bound`), not the bound it was told
    # (J23's was raised by its account's hold to 2,180 s). Jobs 0-20 start at once, a
    # minute apart: the first 19 had no history to give a class bound (None).
    fed: list[float | None] = []
    observe = WaitPredictor.observe

    def feeding(self: WaitPredictor, job: JobClass, wait: float,
                predicted: WaitPrediction | None = None) -> None:
        fed.append(None if predicted is None else predicted.upper_bound)
        observe(self, job, wait, predicted)

    monkeypatch.setattr(WaitPredictor, "observe", feeding)
    jobs = [swf(n, 60 * n, 0, 1, 1, 10, 8) for n in range(21)]
    jobs += [swf(21, 2000, 0, 1000, 2, 2000, 7), swf(22, 2010, 990, 100, 1, 200, 7),
             swf(23, 2020, 1080, 50, 1, 300, 7), swf(24, 9000, 0, 1, 1, 10, 8)]
    told: dict[int, Forecast] = {}
    evaluate_forecasts(jobs, 4, on_forecast=lambda job, _n, _s, made: told.update(
        {job.number: made["combined"]}))
    assert told[23].wait_bound == 2180.0 and "bound raised" in told[23].basis
    assert [told[n].class_bound for n in range(19)] == [None] * 19
    assert fed == [told[n].class_bound for n in range(24)]  # J24 starts after the end
    assert told[23].class_bound is not None and told[23].class_bound < 2180.0


def test_runtime_evaluation_against_baselines() -> None:
    # One user, one processor, runs of 100, 200, 300 and 500 s, one at a time, limit 1000.
    # Predictor: 1000 (no runs), 100, 150, 250: min/max 0.1, 0.5, 0.5, 0.5.
    jobs = [swf(i, 1000 * i, 0, run, 1, 1000) for i, run in enumerate((100, 200, 300, 500))]
    result = evaluate_runtimes(jobs, 4)
    assert result["predictor"] == {
        "jobs": 4, "accuracy": 0.4, "within_factor_2": 0.75, "median_ape": 0.5,
        "mape_runs_over_1min": 2.625,  # (9 + 0.5 + 0.5 + 0.5) / 4
        "rules": {"last runs at this size": {"jobs": 3, "accuracy": 0.5},
                  "time limit (no runs)": {"jobs": 1, "accuracy": 0.1}},
    }
    assert result["last_two_user"]["accuracy"] == 0.4
    # The request: 1000 against 100, 200, 300, 500.
    assert result["requested"]["accuracy"] == pytest.approx(0.275)
    assert result["requested"]["within_factor_2"] == 0.25


def test_history_corrects_what_the_live_queue_cannot_see() -> None:
    # 4 processors, one 1-processor job every 100 s, each held 300 s by the site (a
    # delay no queue shows) and run 10 s. At job k's submit the queue holds jobs k-3 to
    # k-1: the projection says 0 s every time. The waits of jobs 0 to k-4 are known
    # (k - 3 of them); once that is enough for the predictor's bound, it says 300 s.
    needed = next(n for n in range(1, 1000) if _bound_after(n))
    first = needed + 3  # the first job with `needed` known waits
    jobs = [swf(i, 100 * i, 300, 10, 1, 60) for i in range(80)]
    result = evaluate_forecasts(jobs, 4)
    assert result["projection"]["under_bound"] == 0.0
    assert result["history"]["under_bound"] == pytest.approx((80 - first) / 80)
    assert result["combined"]["under_bound"] == pytest.approx((80 - first) / 80)
    assert all(result[m]["within_10min"] == 1.0 for m in ("history", "projection"))
    # Rolling answers from job 4 on (its first known wait), with 300 s.
    assert result["rolling"]["under_bound"] == 0.95


def _bound_after(waits: int) -> bool:
    """Whether the wait predictor gives a bound after `waits` waits of one class."""
    predictor = WaitPredictor()
    for _ in range(waits):
        predictor.observe(JobClass("log", "1", 1, 60.0, 0.0), 300.0)
    return predictor.predict(JobClass("log", "1", 1, 60.0, 0.0)) is not None


def test_the_walk_projects_the_queue_per_event_not_per_submit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # 40 jobs submitted one second apart while one long job runs and nothing starts or
    # ends: one projection (two profiles) serves them all, each job committed on it for
    # the next, as a routing pass commits its jobs. Then each start projects afresh.
    from gateway.scheduling.queues import queue_profile

    made: list[float] = []
    project = queue_profile.QueueProfile.project.__func__  # type: ignore[attr-defined]

    def counting(cls: type, state: QueueState,
                 limits_as_runtimes: bool = False) -> queue_profile.QueueProfile:
        made.append(len(state.queued))
        return project(cls, state, limits_as_runtimes)  # type: ignore[no-any-return]

    monkeypatch.setattr(queue_profile.QueueProfile, "project", classmethod(counting))
    jobs = [swf(0, 0, 0, 10_000, 4, 10_000)]
    jobs += [swf(i, i, 10_000 - i + 100 * (i - 1), 100, 4, 100) for i in range(1, 41)]
    result = evaluate_forecasts(jobs, 4)
    assert result["combined"]["jobs"] == 41
    # Job 0 on an empty machine, job 1 after its start, then nothing until 10,000.
    assert made == [0, 0, 0, 0]
    # Each job of the burst was told it waits for the long job and the jobs ahead of it
    # (each committed for the next): job i, 10,000 - i s, then (i - 1) x 100 s, its wait.
    # Without the commits only the first six would be right within 10 minutes.
    assert result["projection"]["within_10min"] == 1.0
