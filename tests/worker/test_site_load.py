"""A site's live load (GET /api/v1/sites `load`): recorded by the routing step from each
snapshot it takes, with the predicted wait of a 1-node, 1-hour probe job by the
forecaster that routes jobs; null until a snapshot was taken. The local site runs real
jobs (SQLite and PostgreSQL); the Grid Engine site answers with a queue snapshot recorded
on the testbed's `galaxy` (tests/schedulers/fixtures/sge/real_qstat_snapshot.txt and
real_qstat_gc_full.txt, headers there), over a replaying transport."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient

from gateway.api.app import create_app
from gateway.db.engine import transaction
from gateway.repositories import sites as site_rows
from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from gateway.worker.route import route_jobs
from tests.conftest import LOOPBACK, MakeUser
from tests.schedulers.recorded import ReplayTransport, load
from tests.worker.test_routing_snapshots import CORES, JOBS, with_grid
from tests.worker.test_worker_local import post, run_until

AUTO = {"name": "a", "executable": "/bin/true"}


def loads(client: TestClient, headers: dict[str, str]) -> dict[str, Any]:
    r = client.get("/api/v1/sites", headers=headers)
    assert r.status_code == 200, r.text
    return {item["name"]: item["load"] for item in r.json()["items"]}


def test_local_load_counts_its_jobs_and_forecasts_the_probe(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    worker = Worker(runtime, "w")
    assert loads(client, user.headers) == {"local": None}  # no snapshot yet
    route_jobs(worker.ctx)  # nothing waits for a site: no snapshot, nothing recorded
    assert loads(client, user.headers) == {"local": None}

    first = post(client, user.headers, AUTO)
    assert route_jobs(worker.ctx) is True
    idle = loads(client, user.headers)["local"]
    assert (idle["queued_jobs"], idle["running_jobs"]) == (0, 0)
    assert idle["free_cores"] == idle["total_cores"] and idle["total_cores"] >= 1
    assert idle["probe"] == {"nodes": 1, "walltime": 3600, "wait_median": 0.0,
                             "wait_bound": 0.0, "basis": idle["probe"]["basis"]}
    assert idle["probe"]["basis"].startswith("live queue")
    first_at = datetime.fromisoformat(idle["taken_at"])
    # Ended before the next snapshot: on a loaded machine the sandboxed /bin/true can still
    # be running when the sleeper starts, and the snapshot would count two running jobs.
    run_until(worker, client, user.headers, first, {"COMPLETED"})

    # A job holding a core for up to ten minutes: the probe (a whole node) waits for it.
    busy = post(client, user.headers, {"name": "sleeper", "site": "local",
                                       "executable": "/bin/sleep", "args": ["600"],
                                       "resources": {"walltime": 600}})
    run_until(worker, client, user.headers, busy, {"RUNNING"})
    post(client, user.headers, AUTO)
    assert route_jobs(worker.ctx) is True
    full = loads(client, user.headers)["local"]
    assert (full["queued_jobs"], full["running_jobs"]) == (0, 1)
    assert full["free_cores"] == full["total_cores"] - 1
    assert 0 < full["probe"]["wait_median"] <= 600
    assert full["probe"]["wait_bound"] >= full["probe"]["wait_median"]
    assert datetime.fromisoformat(full["taken_at"]) > first_at
    client.post(f"/api/v1/jobs/{busy}/cancel", headers=user.headers)
    run_until(worker, client, user.headers, busy, {"CANCELLED"})


def test_remote_load_from_a_recorded_snapshot(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    transport = ReplayTransport()
    grid = with_grid(runtime, transport)
    worker = Worker(grid, "w")
    post(client, user.headers, AUTO)
    # galaxy full: job 1 runs on both slots; 3, 2, 4 and array tasks 5.1-5.3 pending.
    transport.expect(JOBS, load("sge", "real_qstat_snapshot.txt"))
    transport.expect(CORES, load("sge", "real_qstat_gc_full.txt"))
    assert route_jobs(worker.ctx, worker.health) is True
    transport.assert_done()
    with TestClient(create_app(runtime=grid), client=LOOPBACK) as both:
        remote = loads(both, user.headers)["grid"]
    assert (remote["queued_jobs"], remote["running_jobs"]) == (6, 1)
    assert (remote["free_cores"], remote["total_cores"]) == (0, 2)
    assert remote["probe"]["nodes"] == 1 and remote["probe"]["wait_median"] is not None


def test_an_older_snapshot_never_replaces_a_newer_one(runtime: Runtime) -> None:
    now = datetime(2026, 11, 24, 23, 0, tzinfo=UTC)
    newer = {"queued_jobs": 2}
    with transaction(runtime.sessions) as session:
        site_rows.record_load(session, "local", newer, now)
        # Another worker's pass, begun earlier, finishing later.
        site_rows.record_load(session, "local", {"queued_jobs": 9}, now - timedelta(seconds=5))
    with transaction(runtime.sessions) as session:
        (row,) = site_rows.all_sites(session)
        assert (row.load, row.load_at) == (newer, now)
        site_rows.record_load(session, "local", {"queued_jobs": 1}, now + timedelta(seconds=5))
    with transaction(runtime.sessions) as session:
        (row,) = site_rows.all_sites(session)
        assert row.load == {"queued_jobs": 1}
