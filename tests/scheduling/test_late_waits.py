"""The late-wait model: what it keeps, when it fits, what it learns."""

from __future__ import annotations

import pytest

from gateway.scheduling.prediction.late_waits import (
    LATE_FEATURES,
    LateWaits,
    QueueLoad,
    late_features,
    named_features,
)
from gateway.scheduling.queues.queue_state import QueueState

DAY = 86400.0


def features(hour: int, procs: int = 4) -> tuple[float, ...]:
    load = QueueLoad(3, 2, 1000.0, 8, 500.0)
    return late_features(procs, 3600.0, load, 120.0, 60.0, 900.0, 1800.0, (hour, 2))


def test_features_name_the_job_the_queue_the_forecast_and_the_clock() -> None:
    queue = QueueState(16, running=((8, 100.0, 200.0), (2, -5.0, 10.0)),
                       queued=((4, 50.0, 60.0),))
    load = QueueLoad.of(queue, 200.0)
    assert load == QueueLoad(1, 2, 200.0, 10, 800.0)
    got = late_features(4, 3600.0, load, None, 60.0, 900.0, None, None)
    assert dict(zip(LATE_FEATURES, got, strict=True)) == {
        "processors": 4.0, "time_limit": 3600.0, "queued_jobs": 1.0, "running_jobs": 2.0,
        "queued_work": 200.0, "busy_processors": 10.0, "running_work_left": 800.0,
        "walltime_projection": -1.0, "wait_median": 60.0, "wait_bound": 900.0,
        "class_wait_if_late": -1.0, "hour": -1.0, "weekday": -1.0}
    named = dict(zip(LATE_FEATURES, got, strict=True))
    assert named_features(named) == got
    assert named_features(None) is None
    del named["hour"]
    assert named_features(named) is None  # recorded with another feature set


def test_nothing_is_told_before_enough_late_waits() -> None:
    late = LateWaits(minimum=50)
    for n in range(200):
        late.observe("a", n, features(9), 300.0)  # on time: not late, not kept
    for n in range(200, 249):
        late.observe("a", n, features(9), 3600.0)
    assert late.predict("a", features(9), 0.0) is None
    assert late.predict("elsewhere", features(9), 0.0) is None
    late.observe("a", 249, features(9), 3600.0)
    assert late.predict("a", features(9), 0.0) == pytest.approx(3600.0, rel=0.01)
    assert late.fits == 1


def test_a_row_given_again_is_kept_once_and_the_window_is_bounded() -> None:
    late = LateWaits(window=100, minimum=100)
    for _ in range(3):  # production reads its recent starts again at every pass
        for n in range(99):
            late.observe("a", ("job", n), features(9), 3600.0)
    assert late.predict("a", features(9), 0.0) is None  # 99 rows, not 297
    for n in range(99, 400):
        late.observe("a", ("job", n), features(9), 7200.0)
    # The window holds the last 100 rows only, so the oldest waits are forgotten.
    assert late.predict("a", features(9), 0.0) == pytest.approx(7200.0, rel=0.01)
    late.observe("a", ("job", 0), features(9), 3600.0)  # left the window: a new row


def test_refits_wait_for_new_late_waits_and_for_time() -> None:
    late = LateWaits(minimum=50, refit=50, refit_after=7 * DAY)
    for n in range(50):
        late.observe("a", n, features(9), 1000.0)
    assert late.predict("a", features(9), 0.0) == pytest.approx(1000.0, rel=0.01)
    for n in range(50, 200):
        late.observe("a", n, features(9), 9000.0)
    # 150 new waits, but within the week: the first fit stands.
    assert late.predict("a", features(9), 6 * DAY) == pytest.approx(1000.0, rel=0.01)
    assert late.fits == 1
    assert late.predict("a", features(9), 7 * DAY) > 5000.0
    assert late.fits == 2
    # No clock known: refits wait on the count alone.
    assert late.predict("a", features(9), None) > 5000.0
    assert late.fits == 2


def test_the_hour_and_the_job_are_learnt_together() -> None:
    late = LateWaits(minimum=400)
    n = 0
    for _ in range(25):
        for hour in (9, 18):
            for procs in (4, 64):
                for _ in range(4):
                    # Big jobs submitted in the evening wait ten times longer.
                    wait = 36000.0 if (hour, procs) == (18, 64) else 3600.0
                    late.observe("a", n, features(hour, procs), wait)
                    n += 1
    assert late.predict("a", features(18, 64), 0.0) == pytest.approx(36000.0, rel=0.2)
    assert late.predict("a", features(9, 64), 0.0) == pytest.approx(3600.0, rel=0.2)
    assert late.predict("a", features(18, 4), 0.0) == pytest.approx(3600.0, rel=0.2)
    # Never under the 10 minutes that make a job late.
    short = LateWaits(minimum=20)
    for n in range(20):
        short.observe("b", n, features(9), 601.0)
    assert short.predict("b", features(9), 0.0) >= 600.0
