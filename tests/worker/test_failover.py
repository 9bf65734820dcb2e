"""Failover: an `auto` job not started at a site down longer than the configured time is
also routed to another site; the first attempt to start wins and the stale one is revoked
when its site answers again. A job that named its site waits for it. SQLite and
PostgreSQL."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import update

from adapters.base import NativeState
from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Site
from gateway.domain.states import AttemptState
from gateway.runtime import Runtime
from gateway.services.lifecycle import claims
from gateway.services.lifecycle.statuses import record_site_state
from gateway.worker.context import StepContext
from gateway.worker.failover import fail_over_stranded
from gateway.worker.route import route_jobs
from tests.conftest import MakeUser
from tests.worker.test_hedging import SPEC, Driver, attempt_states, job_of, twin_runtime
from tests.worker.test_worker_local import post


def mark_down(runtime: Runtime, name: str, minutes: float) -> None:
    with transaction(runtime.sessions) as session:
        session.execute(update(Site).where(Site.name == name).values(
            state="down", reason="connection refused",
            state_since=utcnow() - timedelta(minutes=minutes)))


def test_stranded_auto_job_fails_over_and_the_stale_attempt_is_revoked(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    rt = twin_runtime(runtime)
    rt = dataclasses.replace(rt, settings=rt.settings.model_copy(
        update={"failover_after_seconds": 300}))
    ctx = StepContext.of(rt, "w")
    user = make_user()
    auto = post(client, user.headers, SPEC)
    pinned = post(client, user.headers, {**SPEC, "site": "local"})
    assert route_jobs(ctx) is True  # issue 12: routed at dispatch; equal forecasts: 'local'
    d = Driver(rt)
    with transaction(rt.sessions) as session:
        claimed = claims.claim_accepted(session, d.holder, rt.sites.get("local"), 10)
    stale = next(c for c in claimed if c.job_id == auto)
    d.submit("local", stale, "101")

    mark_down(rt, "local", minutes=2)
    assert fail_over_stranded(ctx) is False  # not down long enough yet
    mark_down(rt, "local", minutes=10)
    assert fail_over_stranded(ctx) is True
    assert fail_over_stranded(ctx) is False  # once: the job has an open target now
    reasons = [e["reason"] for e in client.get(f"/api/v1/jobs/{auto}/events",
                                                headers=user.headers).json()["items"]]
    assert ("site 'local' down for over 300 s before the job started; also routed to site "
            "'twin' (first to start wins)") in reasons

    fresh = d.claim("twin")  # the pinned job waits for 'local': only the auto one moves
    assert fresh.job_id == auto
    d.submit("twin", fresh, "202")
    d.status(fresh, NativeState.RUNNING)
    assert job_of(client, user.headers, auto)["site"] == "twin"
    assert d.cancels("local") == [stale.attempt_id]  # sent once 'local' answers again
    d.status(stale, NativeState.CANCELLED)
    d.status(fresh, NativeState.COMPLETED, 0)
    assert attempt_states(client, user.headers, auto) == {
        "local": AttemptState.REVOKED, "twin": AttemptState.COMPLETED}
    assert job_of(client, user.headers, auto)["state"] == "COMPLETED"
    assert job_of(client, user.headers, pinned)["site"] == "local"


def test_the_stale_attempt_wins_when_its_site_returns_first(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    rt = twin_runtime(runtime)
    user = make_user()
    job_id = post(client, user.headers, SPEC)
    assert route_jobs(StepContext.of(rt, "w")) is True  # routed at dispatch: 'local'
    d = Driver(rt)
    stale = d.claim("local")
    d.submit("local", stale, "101")
    mark_down(rt, "local", minutes=60)
    assert fail_over_stranded(StepContext.of(rt, "w")) is True
    fresh = d.claim("twin")
    d.submit("twin", fresh, "202")
    d.status(stale, NativeState.RUNNING)  # 'local' came back and started it first
    assert d.cancels("twin") == [fresh.attempt_id]
    d.status(fresh, NativeState.CANCELLED)
    d.status(stale, NativeState.COMPLETED, 0)
    assert attempt_states(client, user.headers, job_id) == {
        "local": AttemptState.COMPLETED, "twin": AttemptState.REVOKED}


def test_state_since_moves_only_when_the_state_changes(runtime: Runtime) -> None:
    def since() -> object:
        with runtime.sessions() as session:
            return session.get(Site, "local").state_since  # type: ignore[union-attr]

    with transaction(runtime.sessions) as session:
        record_site_state(session, "local", "down", "refused")
    first = since()
    assert first is not None
    with transaction(runtime.sessions) as session:
        record_site_state(session, "local", "down", "timed out")  # still down
    assert since() == first
    with transaction(runtime.sessions) as session:
        record_site_state(session, "local", "up", None)
    assert since() != first
