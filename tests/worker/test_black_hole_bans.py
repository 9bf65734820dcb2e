"""Black-hole bans through the whole gateway (issue 25, item 1): one user's failing
program never takes a site away from others; several users' failures with signs of the
site do, but never from a job pinned there, and a banned site that is the last one open
for a job is deprioritised, not removed; an admin lifts a ban, in the audit chain."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta

from fastapi.testclient import TestClient
from sqlalchemy import update

from adapters.reasons import Reason, because
from gateway.api.app import create_app
from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Attempt, Job
from gateway.domain.errors import Conflict
from gateway.domain.states import AttemptState
from gateway.repositories.money import audit
from gateway.runtime import Runtime
from gateway.services.routing.site_bans import black_holes, unban
from gateway.worker.context import StepContext
from gateway.worker.loop import Worker
from gateway.worker.route import route_jobs
from tests.conftest import LOOPBACK, MakeUser, TestUser
from tests.worker.test_routing_step import SPEC, set_site, show, twin_runtime
from tests.worker.test_worker_local import post, run_until

ENDED = {"COMPLETED", "FAILED", "CANCELLED"}


def test_a_users_own_failing_jobs_leave_the_site_to_everyone(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    """The issue's reproduction: three `gridgate submit --site local --exe /bin/false` as
    one user, then `gridgate submit --exe /bin/true` as another."""
    debugging, other = make_user(), make_user()
    worker = Worker(runtime)
    for _ in range(3):
        job_id = post(client, debugging.headers, {"name": "dbg", "executable": "/bin/false",
                                                  "site": "local"})
        failed = run_until(worker, client, debugging.headers, job_id, ENDED)
        assert (failed["state"], failed["exit_code"]) == ("FAILED", 1), failed
    with runtime.sessions() as session:
        assert black_holes(session, runtime.sites, utcnow()) == {}
    job_id = post(client, other.headers, SPEC)
    done = run_until(worker, client, other.headers, job_id, ENDED)
    assert (done["state"], done["site"]) == ("COMPLETED", "local"), done


def failures(client: TestClient, runtime: Runtime, site: str, users: list[TestUser],
             now: datetime, reason: str = str(Reason.NODE_FAIL)) -> None:
    """A job of each user that failed at `site` with `reason`, a minute ago and before."""
    for i, user in enumerate(users):
        job_id = post(client, user.headers, {**SPEC, "site": site})
        ended = now - timedelta(seconds=60 + 100 * (len(users) - 1 - i))
        with transaction(runtime.sessions) as session:
            session.execute(update(Job).where(Job.id == job_id)
                            .values(state="FAILED", reason=reason, ended_at=ended))
            session.add(Attempt(job_id=job_id, number=1, site_name=site, tag=f"hole-{i}",
                                state=AttemptState.FAILED, reason=reason, workdir="/nowhere",
                                submitted_at=ended - timedelta(seconds=20),
                                started_at=ended - timedelta(seconds=10), ended_at=ended))


def test_several_users_failures_with_signs_of_the_site_ban_it(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    ann, bob, carol = make_user(), make_user(), make_user()
    now = utcnow().replace(microsecond=0)
    twins = dataclasses.replace(twin_runtime(runtime), clock=lambda: now)
    failures(client, runtime, "local", [ann, bob, carol], now)
    job_id = post(client, carol.headers, SPEC)
    assert route_jobs(StepContext.of(twins, "w")) is True
    decision = client.get(f"/api/v1/jobs/{job_id}/placement", headers=carol.headers).json()
    until = now + timedelta(seconds=540)
    ban = ("3 jobs of 3 users failed in a row with signs of the site (NODE_FAIL); out of "
           f"routing until {until:%Y-%m-%d %H:%M:%S} UTC (540 s more)")
    assert decision["chosen"] == ["twin"]
    # Carol's failed job ran at 'local': it is her home, excluded by the ban all the same.
    assert decision["candidates"][1] == {
        "site": "local", "forecast": None, "p_deadline": None, "home": True,
        "excluded": f"site 'local' is out of routing: {ban}"}
    # `gridgate sites` says why and until when (GET /sites, at the gateway's own clock).
    with TestClient(create_app(runtime=twins), client=LOOPBACK) as at_now:
        sites = {s["name"]: s for s in at_now.get("/api/v1/sites", headers=carol.headers)
                 .json()["items"]}
    assert sites["local"]["routing_ban"] == ban
    assert datetime.fromisoformat(sites["local"]["routing_ban_until"]) == until
    assert sites["twin"]["routing_ban"] is None and sites["twin"]["routing_ban_until"] is None


def test_a_ban_never_applies_to_a_job_pinned_to_the_site(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    ann, bob, carol = make_user(), make_user(), make_user()
    failures(client, runtime, "local", [ann, bob, carol], utcnow())
    with runtime.sessions() as session:
        assert "local" in black_holes(session, runtime.sites, utcnow())
    pinned = {**SPEC, "site": "local"}
    estimate = client.post("/api/v1/jobs:estimate", json=pinned, headers=bob.headers)
    assert estimate.status_code == 200, estimate.text
    assert estimate.json()["chosen"] == ["local"], estimate.json()
    done = run_until(Worker(runtime), client, bob.headers, post(client, bob.headers, pinned),
                     ENDED)
    assert (done["state"], done["site"]) == ("COMPLETED", "local"), done


def test_a_banned_site_that_is_the_last_one_open_is_used_saying_so(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    ann, bob, carol = make_user(), make_user(), make_user()
    now = utcnow().replace(microsecond=0)
    twins = dataclasses.replace(twin_runtime(runtime), clock=lambda: now)
    set_site(runtime, "twin", drained=True)
    failures(client, runtime, "local", [ann, bob, carol], now)
    job_id = post(client, bob.headers, SPEC)
    assert route_jobs(StepContext.of(twins, "w")) is True
    job = show(client, bob.headers, job_id)
    assert (job["site"], job["state"]) == ("local", "ACCEPTED")
    assert job["reason"].endswith(
        "; site 'local' is out of routing (3 jobs of 3 users failed in a row with signs of "
        "the site (NODE_FAIL); out of routing until "
        f"{now + timedelta(seconds=540):%Y-%m-%d %H:%M:%S} UTC (540 s more)), but no other "
        "site can take this job now."), job["reason"]
    decision = client.get(f"/api/v1/jobs/{job_id}/placement", headers=bob.headers).json()
    assert decision["candidates"][0]["caution"].startswith("site 'local' is out of routing")


def test_an_admin_lifts_a_ban_in_the_audit_chain(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    ann, bob, carol = make_user(), make_user(), make_user()
    now = utcnow()
    failures(client, runtime, "local", [ann, bob, carol], now,
             str(because(Reason.CANNOT_PREPARE_SANDBOX, "No space left on device")))
    with transaction(runtime.sessions) as session:
        lifted = unban(session, runtime.sites, "local", "root@gw (test)", now)
    assert lifted.reason.startswith("3 jobs of 3 users failed in a row with signs of the "
                                    "site (cannot prepare the job's sandbox)")
    with runtime.sessions() as session:
        assert black_holes(session, runtime.sites, now + timedelta(seconds=1)) == {}
        try:
            unban(session, runtime.sites, "local", "root@gw (test)", now)
        except Conflict as exc:
            assert "is not out of routing" in exc.detail
        else:
            raise AssertionError("a second unban found a ban to lift")
    with runtime.engine.connect() as conn:
        links = audit.of_subject(conn, "site:local")
    assert [(link.kind, link.actor, link.data["ban"]) for link in links] == [
        ("site.unban", "root@gw (test)", lifted.reason)]
    # New failures after the lift ban it again.
    failures(client, runtime, "local", [bob, carol, ann], now + timedelta(seconds=400))
    with runtime.sessions() as session:
        assert "local" in black_holes(session, runtime.sites, now + timedelta(seconds=400))
