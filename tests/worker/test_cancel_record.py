"""A cancel is remembered once, in the database, and that is enough across a crash: a
worker sends the scheduler's cancel and dies; a new worker, whose adapter knows nothing
and finds nothing on the site, still reads the job that vanished as CANCELLED, because
the status step tells the adapter which jobs the gateway cancelled.

The site is Grid Engine over a replaying transport: the answers are the recordings of
tests/schedulers (qdel of a pending job, then qacct with no record of it, both from the
testbed), and every command the worker runs is checked against them in order."""

from __future__ import annotations

import dataclasses

from fastapi.testclient import TestClient
from sqlalchemy import update

from adapters.batch.adapter import VANISHED_AFTER_CANCEL, BatchAdapter
from adapters.sge import SgeDialect
from gateway.db.engine import transaction
from gateway.db.models import Attempt, Job
from gateway.domain.states import AttemptState
from gateway.runtime import Runtime
from gateway.services.sites.entry import SiteEntry
from gateway.services.sites.registry import SiteRegistry
from gateway.worker.cancel import send_cancels
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.schedulers.recorded import ReplayTransport, load
from tests.worker.test_worker_local import post


def sge_runtime(runtime: Runtime, transport: ReplayTransport) -> Runtime:
    """The runtime with one Grid Engine site, `grid`, reached over `transport`."""
    local = runtime.sites.get("local")
    adapter = BatchAdapter(transport, SgeDialect(parallel_environment="mpi"))  # type: ignore[arg-type]
    entry = SiteEntry(name="grid", kind="sge", description="replayed", shape=local.shape,
                      max_jobs=10, adapter=adapter, workdir_root="/scratch/gw")
    registry = SiteRegistry([entry])
    registry.sync(runtime.sessions)
    return dataclasses.replace(runtime, sites=registry)


def test_cancel_survives_a_worker_crash_without_site_markers(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    job_id = post(client, user.headers, {"name": "c", "executable": "/bin/true"})
    first = ReplayTransport().expect(("qdel", "12"), load("sge", "real_qdel_pending.txt"))
    grid = sge_runtime(runtime, first)
    # As if a worker had submitted it to `grid` as job 12, where it is pending.
    with transaction(runtime.sessions) as session:
        session.execute(update(Job).where(Job.id == job_id)
                        .values(site_name="grid", state="QUEUED"))
        session.add(Attempt(job_id=job_id, number=1, site_name="grid", tag=f"gw-{job_id}",
                            native_id="12", state=AttemptState.QUEUED,
                            workdir=f"/scratch/gw/gw-{job_id}"))
    r = client.post(f"/api/v1/jobs/{job_id}/cancel", headers=user.headers)
    assert r.status_code == 202 and r.json()["cancel_requested"] is True

    # The first worker sends the cancel, then dies before it asks for the status.
    assert send_cancels(Worker(grid, "first").ctx, grid.sites.get("grid")) is True
    first.assert_done()
    assert first.files == {}  # nothing about the cancel was left on the site

    second = ReplayTransport()
    second.expect(("qstat", "-xml", "-u", "*"), load("sge", "qstat_xml_empty.txt"))
    second.expect(("qacct", "-m", "-j", "12"), load("sge", "real_qacct_deleted_pending.txt"))
    Worker(sge_runtime(runtime, second), "second").run_once()  # not sent again: polled
    second.assert_done()
    job = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()
    assert job["state"] == "CANCELLED" and job["reason"] == "cancelled by user"
    assert job["attempts"][0]["state"] == "CANCELLED"
    assert job["attempts"][0]["reason"] == VANISHED_AFTER_CANCEL
