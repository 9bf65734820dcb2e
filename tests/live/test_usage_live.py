"""Usage records on the live testbed: a 2-core job on real Slurm (roadrunner, slurmdbd) and
real Grid Engine (galaxy), submitted and read back through `BatchAdapter` over the pinned
SSH transport; its record is the scheduler's own (sacct, qacct)."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable, Iterator
from typing import TypeVar

import pytest

from adapters.base import NativeState, Resources, SubmitRequest
from adapters.batch.adapter import BatchAdapter
from adapters.errors import AdapterError
from adapters.sge import SgeDialect
from adapters.slurm import SlurmDialect
from adapters.ssh import SshTarget, SshTransport
from adapters.usage import UsageRecord
from testbed.state import SiteInfo, TestbedInfo

ACCOUNT = "gwcomm"
DEADLINE = 150.0
SLEEP = 4
T = TypeVar("T")


def _adapter(site: SiteInfo) -> BatchAdapter:
    transport = SshTransport(SshTarget(host=site.ip, port=site.ssh_port, user=ACCOUNT,
                                       host_keys=(site.host_key,), key_path=site.key(ACCOUNT),
                                       site=site.name))
    dialect = SlurmDialect() if site.kind == "slurm" else SgeDialect(
        parallel_environment=site.parallel_environment)
    return BatchAdapter(transport, dialect)


@pytest.fixture(params=["roadrunner", "galaxy"])
def site(request: pytest.FixtureRequest, testbed: TestbedInfo
         ) -> Iterator[tuple[SiteInfo, BatchAdapter]]:
    info = testbed.sites[request.param]
    adapter = _adapter(info)
    yield info, adapter
    adapter.transport.close()


def _until(what: str, found: Callable[[], T | None]) -> T:
    end = time.monotonic() + DEADLINE
    while True:
        value = found()
        if value is not None:
            return value
        if time.monotonic() > end:
            pytest.fail(f"{what} not seen in {DEADLINE:.0f} s")
        time.sleep(1.0)


def test_a_two_core_job_has_its_sites_usage_record(site: tuple[SiteInfo, BatchAdapter]) -> None:
    info, adapter = site
    assert adapter.capabilities.usage
    tag = f"gw-{uuid.uuid4()}"
    native_id = adapter.submit(SubmitRequest(
        tag=tag, workdir=f"{info.scratch_root}/{tag}", argv=["sleep", str(SLEEP)],
        resources=Resources(ranks=2, walltime_seconds=300)))
    try:
        status = _until(f"{info.name} job {native_id} ending", lambda: next(
            (s for s in adapter.status([native_id]).values() if s.state.is_final), None))
        assert status.state is NativeState.COMPLETED, status
        # slurmdbd and qmaster's accounting file may lag the queue: poll the record.
        records: list[UsageRecord] = _until(
            f"{info.name} usage record of {native_id}", lambda: adapter.usage([native_id]) or None)
    finally:
        # Only matters when the test failed early: a finished job's cancel is a no-op or an
        # UnknownJob (Grid Engine forgets finished jobs).
        with contextlib.suppress(AdapterError):
            adapter.cancel(native_id)
    [record] = records
    assert (record.native_id, record.run, record.state, record.exit_code, record.cores,
            record.nodes) == (native_id, 0, NativeState.COMPLETED, 0, 2, 1), record
    assert record.source == ("sacct" if info.kind == "slurm" else "qacct")
    # The site's own clock: the elapsed time lies within its start and end (whole seconds),
    # and the job slept for SLEEP seconds of it.
    assert record.started_at is not None and record.ended_at is not None
    span = (record.ended_at - record.started_at).total_seconds()
    assert SLEEP <= record.elapsed <= span + 1, (record.elapsed, span)
    assert record.key == (native_id, 0)
