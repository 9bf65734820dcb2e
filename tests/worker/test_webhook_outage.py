"""A receiver down for a few seconds while jobs move, then back, gets every event, each
job's in order (issue 29); benchmarks/webhook_outage.py runs the same code
(tests/worker/webhook_outage.py) at 600 s. Short back-off keeps the retries coming; the
run waits for completeness with a generous deadline, and asserts no time."""

from __future__ import annotations

from tests.worker.webhook_outage import Outage, run


def test_a_receiver_back_from_an_outage_gets_everything_in_order_per_job() -> None:
    result = run(Outage(outage_seconds=3.0, jobs=12, backoff=(0.05, 0.5), poll_seconds=0.05,
                        deadline_seconds=300.0))
    assert result["deliveries_refused_meanwhile"] > 0, result
    assert result["events"] >= 12 * 5, result
    assert result["missing"] == result["unexpected"] == result["out_of_order"] == 0, result
    assert result["ok"]
