"""Staging progress events (gateway.worker.staging.progress) without a database or a
clock: the test moves time, the writer is a list (or fails)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from gateway.repositories.events.facts import NewFact
from gateway.schemas.events import JOB_STAGING_TYPE
from gateway.worker.staging.progress import StagingEvents, Throttle


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_throttle_allows_one_report_per_interval_counted_from_its_start() -> None:
    clock = Clock()
    throttle = Throttle(5.0, clock)
    assert not throttle.due()  # nothing before the first interval has passed
    clock.now = 104.9
    assert not throttle.due()
    clock.now = 105.0
    assert throttle.due()
    assert not throttle.due()  # once per interval, however often it is asked
    clock.now = 109.0
    assert not throttle.due()
    clock.now = 110.0
    assert throttle.due()
    clock.now = 200.0  # a long pause: one report, not one per interval missed
    assert throttle.due()
    assert not throttle.due()


def test_a_zero_interval_reports_every_time() -> None:
    throttle = Throttle(0.0, Clock())
    assert throttle.due() and throttle.due()


def data(events: Sequence[NewFact]) -> list[dict[str, Any]]:
    assert all(e.type == JOB_STAGING_TYPE and e.job_id == "job-1" for e in events)
    return [dict(e.data) for e in events]


def test_progress_is_throttled_and_the_done_event_waits_for_its_commit() -> None:
    clock, written = Clock(), []
    events = StagingEvents("job-1", "worker", 5.0, written.extend, clock=clock)
    progress = events.start("in/a.bin", 3000)
    for done, at in [(1000, 101.0), (2000, 105.5), (2500, 106.0), (3000, 111.0)]:
        clock.now = at
        progress(done)
    assert data(written) == [
        {"direction": "in", "path": "in/a.bin", "bytes_done": done, "bytes_total": 3000,
         "done": False, "error": None} for done in (2000, 3000)]
    events.finished()
    # A cache hit sends nothing: its throttle never fires, its done event says all is there.
    events.start("in/b.bin", 70)
    events.finished()
    assert len(written) == 2  # the done events are the caller's to commit
    assert data(events.done_events) == [
        {"direction": "in", "path": "in/a.bin", "bytes_done": 3000, "bytes_total": 3000,
         "done": True, "error": None},
        {"direction": "in", "path": "in/b.bin", "bytes_done": 70, "bytes_total": 70,
         "done": True, "error": None}]
    assert events.failed("late") == []  # between files: no file to blame


def test_a_failure_names_the_file_that_was_moving_and_how_far_it_got() -> None:
    clock, written = Clock(), []
    events = StagingEvents("job-1", "worker", 5.0, written.extend, direction="out",
                           clock=clock)
    progress = events.start("results/x", None)
    progress(4096)
    assert written == []
    assert data(events.failed("sha256 mismatch")) == [
        {"direction": "out", "path": "results/x", "bytes_done": 4096, "bytes_total": None,
         "done": False, "error": "sha256 mismatch"}]
    assert events.done_events == ()


def test_an_event_that_cannot_be_written_never_stops_the_transfer(
        caplog: pytest.LogCaptureFixture) -> None:
    def broken(_: Sequence[NewFact]) -> None:
        raise RuntimeError("database is locked")

    events = StagingEvents("job-1", "worker", 0.0, broken, clock=Clock())
    progress = events.start("in/a.bin", 10)
    progress(5)  # raises nothing
    progress(10)
    events.finished()
    assert [r.message for r in caplog.records] == [
        "job job-1: a staging event was not recorded"] * 2
    assert data(events.done_events)[0]["done"] is True
