"""The offline predictor evaluation: what each method knows at each submit instant, and how
jobs are scored. Logs are built in the tests (SWF lines as the shared traces' README gives
the fields), plus the synthetic log in tests/scheduling/data/synthetic.swf."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.scheduling.evaluation.prediction_eval import (
    LogQueue,
    RollingBaseline,
    Tally,
    evaluate,
    hindsight_within,
)
from gateway.scheduling.evaluation.replay_check import replay_against_log
from gateway.scheduling.swf import SwfJob, iter_jobs, machine_size, parse_job
from gateway.scheduling.wait_predictor import WaitPredictor

DATA = Path(__file__).parent / "data" / "synthetic.swf"


def swf(number: int, submit: int, wait: int, run: int, procs: int, requested: int,
        user: int = 1) -> SwfJob:
    fields = f"{number} {submit} {wait} {run} {procs} -1 -1 {procs} {requested} -1 1 {user}"
    return parse_job(fields + " 1 1 1 -1 -1 -1")


def test_idle_machine_every_method_predicts_no_wait() -> None:
    # 100 one-processor jobs, one every 100 s, each running 10 s with no wait on 4 processors.
    jobs = [swf(i, 100 * i, 0, 10, 1, 60) for i in range(100)]
    result = evaluate(jobs, 4)
    # The 95% prediction bound needs 19 known waits: jobs 0-18 have none (they count as
    # misses). Issue 12's predictor change: the QBETS confidence bound needed 59 (41 jobs).
    assert result["qbets"] == {
        "jobs": 100, "predicted": 81, "within_10min": 0.81, "within_1h": 0.81,
        "under_bound": 0.81, "median_bound_width_s": 0.0,
    }
    # The rolling baseline answers from the first known wait on (job 0 has none).
    assert result["rolling"]["predicted"] == 99 and result["rolling"]["within_10min"] == 0.99
    # The EASY projection always answers; here it is exact.
    assert result["easy_projection"]["within_10min"] == 1.0
    assert result["easy_projection"]["under_bound"] == 1.0


def test_waits_are_known_only_once_the_job_has_started() -> None:
    # Job 0 waits 1000 s; job 1 is submitted while job 0 still waits, so nothing is known.
    jobs = [swf(0, 0, 1000, 10, 1, 60), swf(1, 10, 0, 10, 1, 60), swf(2, 2000, 0, 10, 1, 60)]
    rolling = RollingBaseline()
    queue = LogQueue("t", WaitPredictor(), rolling)
    queue.advance(0.0)
    queue.submit(jobs[0], 60.0, 60.0, 0.0)
    queue.advance(10.0)
    assert rolling.predict(1) is None
    queue.submit(jobs[1], 60.0, 60.0, 0.0)
    queue.advance(1000.0)  # starts at exactly 1000: not yet "before" this instant
    assert rolling.predict(1) == (0.0, 0.0)  # only job 1 (started at 10) is known
    queue.advance(1000.5)
    assert rolling.predict(1) == (1000.0, 1000.0)


def test_snapshot_holds_the_queue_as_logged() -> None:
    queue = LogQueue("t", WaitPredictor(), RollingBaseline())
    queue.submit(swf(0, 0, 0, 500, 4, 1000), 1000.0, 300.0, 0.0)  # runs 0-500
    queue.submit(swf(1, 0, 50, 500, 2, 600), 600.0, 600.0, 0.0)  # runs 50-550
    queue.submit(swf(2, 0, 900, 100, 8, 200), 200.0, 100.0, 0.0)  # waits until 900
    queue.advance(400.0)
    # Requested times: job 0 has 600 s left, job 1 250 s; job 2 is queued.
    assert queue.snapshot(400.0, guessed=False) == ([(4, 600.0), (2, 250.0)], [(8, 200.0)])
    # Guesses: job 0 is past its 300 s guess, so its request stands; job 1 has no history.
    assert queue.snapshot(400.0, guessed=True) == ([(4, 600.0), (2, 250.0)], [(8, 100.0)])


def test_runtime_guess_is_the_mean_of_the_last_two_capped_by_the_request() -> None:
    queue = LogQueue("t", WaitPredictor(), RollingBaseline())
    for number, submit, run in ((0, 0, 100), (1, 1000, 300), (2, 2000, 900)):
        queue.submit(swf(number, submit, 0, run, 1, 5000, user=7), 5000.0, 5000.0, 0.0)
    queue.advance(10_000.0)
    assert queue.runtime_guess(7, 5000.0) == 600.0  # (300 + 900) / 2
    assert queue.runtime_guess(7, 400.0) == 400.0
    assert queue.runtime_guess(8, 5000.0) == 5000.0


def test_rolling_baseline_median_and_p95_by_rank() -> None:
    rolling = RollingBaseline(window=20)
    for wait in range(40):  # the window keeps 20..39
        rolling.observe(3, float(wait))
    assert rolling.predict(2) == (30.0, 39.0)  # 2 and 3 share the log2 bucket 1
    assert rolling.predict(4) is None


def test_tally_counts_missing_predictions_as_misses() -> None:
    tally = Tally()
    tally.score(100.0, None, None)
    tally.score(100.0, 650.0, 50.0)  # 550 s off: within 10 min, above the bound
    tally.score(100.0, 4000.0, 5000.0)  # 65 min off, under the bound
    report = tally.report()
    assert report["predicted"] == 2
    third = pytest.approx(1 / 3, abs=1e-4)
    assert (report["within_10min"], report["within_1h"], report["under_bound"]) == (
        third, third, third
    )
    assert report["median_bound_width_s"] == 2525.0


def test_synthetic_log_walks_end_to_end() -> None:
    result = evaluate(iter_jobs(DATA), machine_size(DATA))
    # 12 jobs, all with a known wait and run time.
    assert {result[name]["jobs"] for name in ("qbets", "rolling", "easy_projection")} == {12}
    assert result["qbets"]["predicted"] == 0  # far fewer than 59 waits


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


def test_hindsight_median_reference() -> None:
    # Median of (0, 0, 100, 700, 5000) is 100: 0, 0, 100 and 700 lie within 600 s of it.
    assert hindsight_within([0.0, 0.0, 100.0, 700.0, 5000.0], 600.0) == 0.8
    assert hindsight_within([], 600.0) is None


def test_predictions_are_fed_back_to_the_calibration() -> None:
    # Each job waits a second longer than the one before (and starts before the next
    # submit): a bound read from past waits alone would miss every time (wait i > every
    # earlier wait). The outcomes fed back as the jobs start raise the site's scale until
    # the bounds hold: 181 jobs predicted, most of them covered.
    jobs = [swf(i, 100 * i, i, 60, 1, 60) for i in range(200)]
    result = evaluate(jobs, 4, site="drift")
    assert result["qbets"]["predicted"] == 181 and result["qbets"]["under_bound"] >= 0.8
    assert result["bound_scale"] > 1.0
