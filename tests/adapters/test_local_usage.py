"""The local site's usage records (adapters.local.usage): from its own job records, with
real runners and processes (as tests/adapters/test_local.py)."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from adapters.base import Adapter, NativeState, Resources, SubmitRequest
from adapters.local import LocalAdapter
from adapters.local.records import Outcome
from adapters.local.usage import usage_record
from adapters.reasons import Reason
from tests.adapters.test_local import stop_everything, wait_final, wait_state

T0 = datetime(2026, 11, 25, 1, 0, tzinfo=UTC)


@pytest.fixture
def site(tmp_path: Path) -> Iterator[LocalAdapter]:
    adapter = LocalAdapter(tmp_path / "jobs", None, kill_grace_seconds=1.0)
    try:
        yield adapter
    finally:
        stop_everything(adapter)


def request(site: LocalAdapter, argv: list[str], ranks: int = 1) -> SubmitRequest:
    tag = f"gw-{uuid.uuid4()}"
    return SubmitRequest(tag=tag, workdir=str(site.jobs_root / tag), argv=argv,
                         resources=Resources(ranks=ranks, memory_mb=300))


def test_a_record_from_an_outcome() -> None:
    outcome = Outcome(NativeState.COMPLETED, "completed", 0, None, T0,
                      T0 + timedelta(seconds=90))
    record = usage_record("local-" + "0" * 24, {"resources": {"ranks": 2, "threads_per_rank": 3,
                                                               "memory_mb": 1024}},
                          outcome, "{}")
    assert (record.run, record.state, record.exit_code, record.elapsed, record.cores,
            record.nodes, record.memory_mb, record.source) == (
        0, NativeState.COMPLETED, 0, 90, 6, 1, 1024, "local")


def test_a_job_that_never_started_held_nothing() -> None:
    outcome = Outcome(NativeState.CANCELLED, "cancelled", None, Reason.CANCELLED_BEFORE_START,
                      None, T0)
    record = usage_record("local-" + "0" * 24, {"resources": {"ranks": 4}}, outcome, "{}")
    assert (record.started_at, record.elapsed, record.cores, record.nodes) == (
        None, 0, 0, 0)


def test_ended_jobs_have_records_running_ones_none(site: LocalAdapter) -> None:
    adapter: Adapter = site
    assert adapter.capabilities.usage
    failed = site.submit(request(site, ["sh", "-c", "exit 3"], ranks=2))
    running = site.submit(request(site, [sys.executable, "-c", "import time; time.sleep(60)"]))
    status = wait_final(site, failed)
    wait_state(site, running, NativeState.RUNNING)
    records = adapter.usage([running, failed, "local-" + "f" * 24])
    assert [(r.native_id, r.run, r.state, r.exit_code, r.cores, r.nodes, r.memory_mb)
            for r in records] == [(failed, 0, NativeState.FAILED, 3, 2, 1, 300)]
    [record] = records
    # The runner's own times, the same the status reports.
    assert (record.started_at, record.ended_at) == (status.started_at, status.ended_at)
    assert record.started_at is not None and record.ended_at is not None
    assert record.elapsed == round((record.ended_at - record.started_at).total_seconds())
    assert '"exit_code": 3' in record.raw


def test_a_job_cancelled_before_its_runner_started(site: LocalAdapter) -> None:
    native_id = site.prepare(request(site, ["true"], ranks=2))
    site.cancel(native_id)
    [record] = site.usage([native_id])
    assert (record.state, record.started_at, record.elapsed, record.cores) == (
        NativeState.CANCELLED, None, 0, 0)
