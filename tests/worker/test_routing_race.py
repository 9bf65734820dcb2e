"""Two workers route the same pending jobs at once on PostgreSQL: each job is routed
exactly once (one placement row, one routing event), whatever the interleaving (rows
locked FOR UPDATE SKIP LOCKED; gateway.services.routing.placement)."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from gateway.db.models import Event, Job, Placement
from gateway.runtime import Runtime
from gateway.services.routing.forecasting import build_forecaster
from gateway.services.routing.placement import route_pending
from gateway.worker.context import StepContext
from tests.conftest import MakeUser
from tests.worker.test_worker_local import post

JOBS = 120


@pytest.mark.parametrize("database_kind", ["postgresql"], indirect=True)
def test_two_workers_route_each_job_once(client: TestClient, runtime: Runtime,
                                         make_user: MakeUser) -> None:
    user = make_user()
    ids = {post(client, user.headers, {"name": f"j{i}", "executable": "/bin/true"})
           for i in range(JOBS)}
    start = threading.Barrier(2)
    placed: Counter[str] = Counter()
    errors: list[BaseException] = []

    def work(name: str) -> None:
        ctx = StepContext.of(runtime, name)
        try:
            start.wait()
            while True:
                # Small passes, so the two workers' passes interleave.
                with ctx.unit() as session:
                    result = route_pending(session, runtime.sites, build_forecaster,
                                           ctx.holder.actor, 7, runtime.clock())
                if not result.placed:
                    return
                placed[name] += result.placed
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert sum(placed.values()) == JOBS
    with runtime.sessions() as session:
        rows = Counter(session.scalars(select(Placement.job_id)))
        routed = Counter(session.scalars(select(Event.job_id).where(
            Event.from_state == "ACCEPTED", Event.to_state == "ACCEPTED")))
        sites = set(session.scalars(select(Job.site_name)))
    assert set(rows) == ids and set(rows.values()) == {1}
    assert set(routed) == ids and set(routed.values()) == {1}
    assert sites == {"local"}
