"""Crash safety of event delivery (issue 29, item 7) at a small size: the worker and the
API process are each killed with SIGKILL twice while 30 jobs move, with a webhook and 3
event streams attached; every consumer gets every event, none out of order per job.
benchmarks/event_crash_run.py runs the same code (tests/worker/event_crash.py) at 500
jobs. And: the check itself finds each kind of fault it reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.worker.event_crash import (
    Consumer,
    Run,
    Seen,
    Truth,
    check,
    run,
    run_state,
    wait_until,
)

TRUTH = Truth({1: ("a", "ACCEPTED"), 2: ("b", "ACCEPTED"), 3: ("a", "QUEUED"),
               4: ("a", "COMPLETED")})


def _consumer(*seen: tuple[int, str, str]) -> Consumer:
    return Consumer("c", [Seen(*s) for s in seen])


def test_the_check_counts_duplicates_missing_mislabelled_and_disorder() -> None:
    clean = check(_consumer((1, "a", "ACCEPTED"), (2, "b", "ACCEPTED"), (1, "a", "ACCEPTED"),
                            (3, "a", "QUEUED"), (4, "a", "COMPLETED")), TRUTH)
    assert clean == {"received": 5, "duplicates": 1, "missing": 0, "mislabelled": 0,
                     "out_of_order": 0, "errors": 0}
    # Event 3 after 4 (same job); event 2 never; event 1 again under another id.
    faulty = check(_consumer((1, "a", "ACCEPTED"), (4, "a", "COMPLETED"), (3, "a", "QUEUED"),
                             (5, "a", "ACCEPTED")), TRUTH)
    assert faulty == {"received": 4, "duplicates": 0, "missing": 1, "mislabelled": 1,
                      "out_of_order": 1, "errors": 0}


def test_kill9_worker_and_api_while_jobs_move_loses_and_reorders_no_event(
        tmp_path: Path) -> None:
    # A killed worker's leased webhooks go out again after the lease (3 s here); a short
    # timeout keeps a slow receiver from holding the run up. A wait that gives up (well
    # within the test's timeout) tells what each stream got and the processes' logs.
    result = run(Run(jobs=30, kills=2, sse_clients=3, webhook_timeout=0.1, deadline=100),
                 tmp_path)
    assert [k["process"] for k in result["kills"]] == ["worker", "api"] * 2
    assert result["errors"] == {}, result
    for name, counts in result["consumers"].items():
        assert counts["received"] >= result["events"] > 0, (name, result)
        assert counts["missing"] == counts["mislabelled"] == counts["out_of_order"] == 0, \
            (name, result)
    assert result["ok"]


def test_a_wait_that_gives_up_tells_what_each_stream_got_and_the_logs_ends(
        tmp_path: Path) -> None:
    (tmp_path / "api.log").write_text("early\n" * 1000 + "the last line\n")
    streams = [_consumer((7, "a", "QUEUED"))]
    with pytest.raises(RuntimeError) as gave_up:
        wait_until(lambda: False, "the sentinel", 0, lambda: run_state(
            streams, ["s"], [tmp_path / "api.log", tmp_path / "worker.log"]))
    told = str(gave_up.value)
    assert told.startswith("gave up waiting for the sentinel; ")
    assert '"received": 1' in told and '"last_id": 7' in told
    assert "the last line" in told and '"worker.log": null' in told
