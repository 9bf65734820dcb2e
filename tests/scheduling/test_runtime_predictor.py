"""Runtime predictor: golden values computed by hand (Tsafrir's rule, scaling, speeds)."""

from __future__ import annotations

import pytest

from gateway.scheduling.prediction.runtime_predictor import RuntimePredictor


def test_no_runs_fall_back_to_the_limit() -> None:
    estimate = RuntimePredictor().predict("u", "app", "a", 4, 3600)
    assert (estimate.seconds, estimate.basis) == (3600, "time limit (no earlier runs)")
    assert not estimate.known  # issue 28: a person is told "unknown", not the limit


def test_mean_of_last_two_runs_at_the_same_size_capped_by_the_limit() -> None:
    runs = RuntimePredictor()
    for seconds in (100.0, 200.0, 400.0):
        runs.observe("u", "app", "a", 4, seconds)
    estimate = runs.predict("u", "app", "a", 4, 3600)
    assert estimate.seconds == pytest.approx(300.0)  # (200 + 400) / 2
    assert estimate.basis == "last 2 runs at 4 processors" and estimate.known
    capped = runs.predict("u", "app", "a", 4, 250)
    assert capped.seconds == 250
    assert capped.basis.startswith("time limit") and capped.known  # the runs reach it
    # Another user's runs never count.
    assert runs.predict("v", "app", "a", 4, 900).basis == "time limit (no earlier runs)"


def test_a_new_application_falls_back_to_the_users_other_runs() -> None:
    runs = RuntimePredictor()
    runs.observe("u", "app", "a", 4, 100.0)
    runs.observe("u", "solver", "a", 4, 300.0)
    runs.observe("u", "solver", "a", 4, 500.0)
    estimate = runs.predict("u", "new", "a", 4, 3600)
    assert estimate.seconds == pytest.approx(400.0)  # the user's last two at 4: 300, 500
    assert estimate.basis == "last 2 runs at 4 processors of other applications"
    # Issue 28: other programs' runs rank the job but say nothing of how long it runs
    # (a shell script predicted at 0 s from `echo` jobs).
    assert not estimate.known
    # The application's own runs at another site come first (scaled by speed).
    runs.observe("u", "new", "b", 4, 50.0)
    elsewhere = runs.predict("u", "new", "a", 4, 3600)
    assert elsewhere.seconds == pytest.approx(50.0) and elsewhere.known


def test_other_size_uses_the_last_two_runs_of_any_size() -> None:
    runs = RuntimePredictor()
    runs.observe("u", "app", "a", 4, 100.0)
    runs.observe("u", "app", "a", 2, 300.0)
    estimate = runs.predict("u", "app", "a", 8, 3600)
    assert estimate.seconds == pytest.approx(200.0)
    assert estimate.basis == "last 2 runs"


def test_three_sizes_give_the_scaling_fit() -> None:
    # t(p) = 10 + 90/p exactly: 100 s on 1, 55 on 2, 32.5 on 4; on 8: 10 + 11.25.
    runs = RuntimePredictor()
    for procs, seconds in ((1, 100.0), (2, 55.0), (4, 32.5)):
        runs.observe("u", "app", "a", procs, seconds)
    estimate = runs.predict("u", "app", "a", 8, 3600)
    assert estimate.seconds == pytest.approx(21.25, rel=1e-6)
    assert estimate.basis == "scaling fit over 3 sizes"
    # A size already run keeps its own runs.
    assert runs.predict("u", "app", "a", 2, 3600).seconds == pytest.approx(55.0)


def test_configured_speeds_scale_runs_from_another_site() -> None:
    runs = RuntimePredictor(speeds={"a": 1.0, "b": 2.0})
    runs.observe("u", "app", "a", 4, 100.0)
    runs.observe("u", "app", "a", 4, 300.0)
    estimate = runs.predict("u", "app", "b", 4, 3600)
    assert estimate.seconds == pytest.approx(100.0)  # 200 at a, b twice as fast
    assert estimate.basis == "last 2 runs at 4 processors at 'a' x 0.50"
    assert runs.speed_ratio("b", "a") == pytest.approx(2.0)


def test_speed_learned_from_applications_run_on_both_sites() -> None:
    runs = RuntimePredictor(speeds={"a": 1.0, "b": 2.0})  # config says b is 2x: wrong
    runs.observe("u", "app", "a", 4, 200.0)
    runs.observe("u", "app", "b", 4, 150.0)  # the same run takes 0.75 of a's time at b
    assert runs.speed_ratio("a", "b") == pytest.approx(0.5)  # one pair: noise, not speed
    for user in "vwxy":  # four more applications agree: five of five pairs beat chance
        runs.observe(user, "code", "a", 2, 400.0)
        runs.observe(user, "code", "b", 2, 300.0)
    assert runs.speed_ratio("a", "b") == pytest.approx(0.75)
    assert runs.speed_ratio("b", "a") == pytest.approx(1 / 0.75)
    runs.observe("w", "solver", "a", 8, 400.0)
    assert runs.predict("w", "solver", "b", 8, 3600).seconds == pytest.approx(300.0)
    # Runs of another size, or under another time limit, do not compare the machines.
    runs.observe("u", "app", "b", 16, 10.0)
    runs.observe("z", "app", "a", 4, 100.0, limit=3600)
    runs.observe("z", "app", "b", 4, 1.0, limit=600)
    assert runs.speed_ratio("a", "b") == pytest.approx(0.75)


def test_a_ratio_within_its_noise_keeps_the_configured_speed() -> None:
    runs = RuntimePredictor()
    runs.observe("u", "app", "a", 4, 100.0)
    runs.observe("u", "app", "b", 4, 50.0)  # 0.5
    runs.observe("v", "code", "a", 4, 100.0)
    runs.observe("v", "code", "b", 4, 1000.0)  # 10: the two disagree
    assert runs.speed_ratio("a", "b") == 1.0
    for user in "cdefghi":  # seven more pairs at 0.5: 8 of 9 below 1 beats chance
        runs.observe(user, "app", "a", 4, 100.0)
        runs.observe(user, "app", "b", 4, 50.0)
    assert runs.speed_ratio("a", "b") == pytest.approx(0.5)  # the median pair, not the mean


def test_runs_that_never_ran_are_ignored() -> None:
    runs = RuntimePredictor()
    runs.observe("u", "app", "a", 4, 0.0)
    assert runs.predict("u", "app", "a", 4, 600).seconds == 600


def test_every_site_is_predicted_from_the_same_last_runs() -> None:
    # Old long runs at a, a newer short run at b: both sites are predicted from the
    # user's last two runs, wherever they ran (else a router moves the job to b on b's
    # sample of runs alone: the federation suite's HPC2Nx100 origin waited 6% longer).
    runs = RuntimePredictor()
    for seconds in (100_000.0, 120_000.0):
        runs.observe("u", "", "a", 4, seconds)
    runs.observe("u", "", "b", 4, 60.0)
    at_a = runs.predict("u", "", "a", 4, 200_000)
    at_b = runs.predict("u", "", "b", 4, 200_000)
    assert at_a.seconds == at_b.seconds == pytest.approx(60_030.0)  # (120000 + 60) / 2
    assert at_a.basis == "last 2 runs at 4 processors, here and at 'b' x 1.00"
    assert at_b.basis == "last 2 runs at 4 processors, here and at 'a' x 1.00"
    # An unknown application's runs at two sites are not the same program: no speed.
    assert runs.speed_ratio("a", "b") == 1.0
    for user in "uvwxy":
        runs.observe(user, "app", "a", 4, 100.0)
        runs.observe(user, "app", "b", 4, 50.0)
    assert runs.speed_ratio("a", "b") == pytest.approx(0.5)
