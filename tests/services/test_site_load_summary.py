"""The stored load of a site: counts and cores from the snapshot as the scheduler gave
them, the probe's forecast; a wait no finite time holds (a site too small for a whole
node of its own shape) is stored as null, which JSON can carry."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime

from adapters.snapshot import JobPhase, QueueSnapshot, SnapshotJob
from gateway.scheduling.ranking import Forecast
from gateway.services.routing.site_load import load_out, summary

AT = datetime(2026, 11, 24, 23, 0, tzinfo=UTC)


def snapshot(free: int | None, total: int | None) -> QueueSnapshot:
    jobs = (SnapshotJob("1", JobPhase.RUNNING, "R", cores=4),
            SnapshotJob("2", JobPhase.PENDING, "PD"), SnapshotJob("3", JobPhase.PENDING, "PD"))
    return QueueSnapshot(taken_at=AT, total_cores=total, free_cores=free, queues=(), jobs=jobs)


def test_summary_and_the_api_document() -> None:
    stored = summary(snapshot(0, 4), Forecast(120.0, 900.0, 3600.0, 0.0, basis="live queue"))
    assert json.loads(json.dumps(stored)) == stored
    assert load_out(stored, AT) == {
        "taken_at": AT, "queued_jobs": 2, "running_jobs": 1, "free_cores": 0,
        "total_cores": 4, "probe": {"nodes": 1, "walltime": 3600, "wait_median": 120.0,
                                    "wait_bound": 900.0, "basis": "live queue"}}
    assert load_out(None, None) is None


def test_an_endless_wait_and_unknown_cores_are_null() -> None:
    stored = summary(snapshot(None, None), Forecast(math.inf, math.inf, 3600.0, 0.0))
    json.dumps(stored, allow_nan=False)  # no Infinity in the stored JSON
    assert (stored["free_cores"], stored["total_cores"]) == (None, None)
    assert (stored["probe"]["wait_median"], stored["probe"]["wait_bound"]) == (None, None)
