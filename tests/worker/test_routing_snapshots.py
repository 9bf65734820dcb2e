"""The routing step asks every open site once per pass how busy it is (its queue), before
it locks any row: a site that cannot be reached is excluded from the pass, saying why, and
recorded down; it is asked again on the next pass, and routed to once it answers.

The remote site is Grid Engine over a replaying transport (tests/schedulers/recorded):
its snapshot (`qstat -xml -r -g d -u *`, then `qstat -g c`) is the one recorded on the
testbed's `galaxy` with two users' jobs filling it, and every command the step runs is
checked against the expected ones in order."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select

from adapters.batch.adapter import BatchAdapter
from adapters.errors import ConnectionFailed
from adapters.sge import SgeDialect
from gateway.db.models import Site
from gateway.runtime import Runtime
from gateway.services.sites.entry import SiteEntry
from gateway.services.sites.registry import SiteRegistry
from gateway.worker.loop import Worker
from gateway.worker.route import route_jobs
from tests.conftest import MakeUser
from tests.schedulers.recorded import ReplayTransport, load
from tests.worker.test_worker_local import post

JOBS = ("qstat", "-xml", "-r", "-g", "d", "-u", "*")
CORES = ("qstat", "-g", "c")
# When the snapshots are taken (after every recorded job's start).
TAKEN = datetime(2030, 1, 1, tzinfo=UTC)
SPEC = {"name": "s", "executable": "/bin/true"}


def with_grid(runtime: Runtime, transport: ReplayTransport) -> Runtime:
    """The runtime with a Grid Engine site `grid` (reached over `transport`) beside local."""
    local = runtime.sites.get("local")
    adapter = BatchAdapter(transport, SgeDialect(parallel_environment="mpi"),  # type: ignore[arg-type]
                           clock=lambda: TAKEN)
    grid = SiteEntry(name="grid", kind="sge", description="replayed", shape=local.shape,
                     max_jobs=10, adapter=adapter, workdir_root="/scratch/gw")
    registry = SiteRegistry([local, grid])
    registry.sync(runtime.sessions)
    return dataclasses.replace(runtime, sites=registry)


def site_state(runtime: Runtime) -> tuple[str, str | None]:
    with runtime.sessions() as session:
        row = session.scalars(select(Site).where(Site.name == "grid")).one()
        return row.state, row.reason


def placed(client: TestClient, headers: dict[str, str], job_id: str) -> dict[str, Any]:
    r = client.get(f"/api/v1/jobs/{job_id}/placement", headers=headers)
    assert r.status_code == 200, r.text
    decision: dict[str, Any] = r.json()
    return decision


def test_an_unreachable_site_is_skipped_then_used_again(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    transport = ReplayTransport()
    transport.expect(JOBS, ConnectionFailed("grid: connection refused"))
    grid = with_grid(runtime, transport)
    worker = Worker(grid, "w")
    assert route_jobs(worker.ctx, worker.health) is False  # nothing waits: no call made
    assert transport.calls == []
    first = post(client, user.headers, SPEC)
    assert route_jobs(worker.ctx, worker.health) is True
    decision = placed(client, user.headers, first)
    assert decision["chosen"] == ["local"]
    assert decision["candidates"][1] == {
        "site": "grid", "excluded": "site 'grid' is unreachable: grid: connection refused",
        "forecast": None, "p_deadline": None}
    assert site_state(runtime) == ("down", "grid: connection refused")

    # Back, and full: job 1 holds both slots; job 3 (both slots, a day) is next in line.
    transport.expect(JOBS, load("sge", "real_qstat_snapshot.txt"))
    transport.expect(CORES, load("sge", "real_qstat_gc_full.txt"))
    second = post(client, user.headers, SPEC)
    assert route_jobs(worker.ctx, worker.health) is True
    transport.assert_done()
    decision = placed(client, user.headers, second)
    assert decision["chosen"] == ["local"]
    grid_site = decision["candidates"][1]
    assert (grid_site["site"], grid_site["excluded"]) == ("grid", None)
    forecast = grid_site["forecast"]
    # Job 1 is past its limit; job 3 then holds both slots for its day; on the slot that
    # frees first run job 2 (600 s) and array 5's three 300 s tasks (job 4, without a
    # limit, holds the other); the new job queues behind them all.
    assert (forecast["wait_median"], forecast["wait_bound"]) == (87900.0, 87900.0)
    assert forecast["basis"].startswith("live queue (no wait history)")
    assert site_state(runtime) == ("up", None)
