"""Production reads each account's own queue from the site's snapshot: a job whose
account's waiting jobs are held although processors are free gets a bound no earlier
than those jobs let it start, as the evaluation and the simulator compute it
(gateway/scheduling/queues/account_queue.py). SQLite and PostgreSQL."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from fastapi.testclient import TestClient

from adapters.snapshot import JobPhase, QueueSnapshot, SnapshotJob
from gateway.db.base import utcnow
from gateway.db.models import Job
from gateway.repositories.jobs import rows as jobs
from gateway.runtime import Runtime
from gateway.scheduling.constraints import JobView
from gateway.services.routing.forecasting import build_forecaster
from gateway.services.routing.placement import Pending
from gateway.services.routing.site_snapshots import SiteSnapshot
from gateway.services.sites.entry import SiteEntry
from gateway.services.sites.registry import SiteRegistry
from tests.conftest import MakeUser
from tests.worker.test_worker_local import post


def test_an_entry_names_the_account_each_user_runs_under(runtime: Runtime) -> None:
    local = runtime.sites.get("local")
    community = dataclasses.replace(local, accounts={"": "gwcomm"})
    assert community.account_name("alice") == community.account_name(None) == "gwcomm"
    mapped = dataclasses.replace(local, accounts={"alice": "gwalice"})
    assert (mapped.account_name("alice"), mapped.account_name("bob")) == ("gwalice", None)
    assert local.account_name("alice") is None  # the local site names none


def _bound(runtime: Runtime, entry: SiteEntry, pending: Pending, queue: QueueSnapshot,
           ) -> tuple[float, str]:
    with runtime.sessions() as session:
        forecaster = build_forecaster(session, SiteRegistry([entry]), [pending], queue.taken_at,
                                      {entry.name: SiteSnapshot(entry.name, queue)})
        forecast = forecaster.forecast(pending, entry.name)
    return forecast.wait_bound, forecast.basis


def test_a_held_account_raises_the_bound_of_its_next_job(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    job_id = post(client, user.headers, {"name": "next", "executable": "/bin/true",
                                         "resources": {"walltime": 600}})
    now = utcnow()
    with runtime.sessions() as session:
        job = session.get(Job, job_id)
        assert job is not None
        spec = jobs.stored_spec(job.spec)
        pending = Pending(job_id, spec, user.principal.username, job.owner_id, JobView(spec), now)
    local = runtime.sites.get("local")
    cores = local.shape.max_nodes * local.shape.cores_per_node
    # The community account runs one 1-core job with 50 of its 60 minutes left, and a
    # 20-minute job of its own waits although cores are free: it is held.
    running = SnapshotJob("1", JobPhase.RUNNING, "R", cores=1, time_limit_seconds=3600,
                          started_at=now - timedelta(minutes=10), user="gwcomm")
    waiting = SnapshotJob("2", JobPhase.PENDING, "PD", cores=1, time_limit_seconds=1200,
                          user="gwcomm")
    queue = QueueSnapshot(now, cores + 1, cores, (), (running, waiting))
    held = dataclasses.replace(local, accounts={"": "gwcomm"})
    bound, basis = _bound(runtime, held, pending, queue)
    assert bound == 3000.0 + 1200.0  # the running job's 50 minutes, then the held one's 20
    assert "the account's jobs ahead of it are held" in basis
    # The same queue under another account says nothing of this user's next job.
    other = dataclasses.replace(local, accounts={"": "someone-else"})
    bound, basis = _bound(runtime, other, pending, queue)
    assert bound < 3000.0 and "held" not in basis
