"""The events that are not a job's state change, against a live gateway (uvicorn,
worker, local site): a routed job's placement, its inputs' staging, a site's state, an
allocation's use
passing 50/80/100% of its award and its suspension. Each is written by the code that
makes the change, and reaches exactly those who may read its subject: a job's owner, an
allocation's project PIs, admins and auditors for everything; nobody else."""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from gateway.accounting.charging import charge_for
from gateway.accounting.rates import Rate
from gateway.auth.project_access import PI_ROLE
from gateway.db.engine import transaction
from gateway.db.models import Attempt, Event
from gateway.domain.states import AttemptState, JobState
from gateway.repositories.identity import projects
from gateway.repositories.jobs.predictions import Announcement, announce
from gateway.schemas.events import (
    ALLOCATION_STATUS_TYPE,
    ALLOCATION_USAGE_TYPE,
    EVENT_TYPES,
    JOB_PLACEMENT_TYPE,
    JOB_PREDICTION_TYPE,
    JOB_STAGING_TYPE,
    JOB_STATE_TYPE,
    SITE_STATE_TYPE,
    WORKFLOW_STATE_TYPE,
    WORKFLOW_STEP_TYPE,
)
from gateway.services.lifecycle.statuses import record_site_state
from gateway.services.money import allocations, bank
from gateway.services.money.allocation_events import crossed
from gateway.services.money.allocations import Grant
from gateway.services.money.bank import Payer
from tests.api.test_event_stream import Headers, Reader, account, user
from tests.client.live import LiveGateway, gateway_on
from tests.services import bank_fixtures as bf
from tests.services.bank_fixtures import NOW, YEAR


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    # A progress event for every chunk a staging reports: no test waits out the throttle.
    with gateway_on(request, tmp_path_factory.mktemp("gateway"),
                    events_heartbeat_seconds=0.05, events_poll_seconds=0.05,
                    staging_progress_seconds=0) as gw:
        yield gw


@pytest.fixture
def http(gateway: LiveGateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway.url, timeout=60) as client:
        yield client


def last_id(gateway: LiveGateway) -> int:
    with gateway.runtime.sessions() as session:
        return int(session.scalar(select(func.coalesce(func.max(Event.id), 0))) or 0)


def replayed(http: httpx.Client, headers: Headers, after: int,
             params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Every event the reader's stream replays after id `after` (a heartbeat comes only
    once the replay is sent)."""
    with http.stream("GET", "/api/v1/events", headers={**headers, "Last-Event-ID": str(after)},
                     params=params or {}) as response:
        return Reader(response, EVENT_TYPES).until_heartbeat()


def test_a_routed_jobs_placement_is_its_owners_event(gateway: LiveGateway,
                                                     http: httpx.Client) -> None:
    alice, bob, auditor = user(gateway), user(gateway), user(gateway, ("auditor",))
    before = last_id(gateway)
    response = http.post("/api/v1/jobs", headers=alice, json={
        "name": "routed", "executable": "sh", "args": ["-c", "true"], "site": "auto"})
    assert response.status_code == 202, response.text
    job_id = response.json()["id"]
    deadline = time.monotonic() + 180
    while not JobState(http.get(f"/api/v1/jobs/{job_id}", headers=alice)
                       .json()["state"]).is_final:
        assert time.monotonic() < deadline, "the job did not end"
        time.sleep(0.1)
    mine = replayed(http, alice, before)
    [placed] = [e for e in mine if e["type"] == JOB_PLACEMENT_TYPE]
    assert placed["subject"] == job_id and placed["source"].endswith("/api/v1/jobs")
    assert placed["data"]["chosen"] == ["local"] and placed["data"]["job"]["id"] == job_id
    assert placed["data"]["policy"] and placed["data"]["why"]
    # When the decision predicted it to start: the first prediction its owner is told.
    assert datetime.fromisoformat(placed["data"]["predicted_start"]).tzinfo is not None
    states = [e for e in mine if e["type"] == JOB_STATE_TYPE]
    # Placed after it was accepted, before it ran: in the log's order.
    assert int(states[0]["id"]) < int(placed["id"]) < int(states[-1]["id"])
    assert replayed(http, bob, before) == []
    assert placed in replayed(http, auditor, before)
    # The type filter: only placements.
    assert replayed(http, alice, before, {"type": JOB_PLACEMENT_TYPE}) == [placed]


def uploaded(http: httpx.Client, headers: Headers, data: bytes) -> str:
    """The id of a complete upload of `data`."""
    created = http.post("/api/v1/uploads", headers=headers, json={
        "name": "data.bin", "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    assert created.status_code == 201, created.text
    upload_id: str = created.json()["id"]
    put = http.put(f"/api/v1/uploads/{upload_id}", content=data, headers={
        **headers, "Content-Range": f"bytes 0-{len(data) - 1}/{len(data)}"})
    assert put.status_code == 200, put.text
    done = http.post(f"/api/v1/uploads/{upload_id}/complete", json={}, headers=headers)
    assert done.status_code == 200, done.text
    return upload_id


def moved(events: list[dict[str, Any]], direction: str, path: str, size: int) -> None:
    """`events` are one file's staging: progress while it moved (a throttle of 0: every
    chunk), then done with all of it."""
    assert [(e["data"]["direction"], e["data"]["path"], e["data"]["bytes_total"],
             e["data"]["error"]) for e in events] == [(direction, path, size, None)
                                                      ] * len(events)
    *moving, last = [(e["data"]["bytes_done"], e["data"]["done"]) for e in events]
    assert len(moving) >= 3 and not any(done for _, done in moving), events
    assert [n for n, _ in moving] == sorted(n for n, _ in moving) and moving[0][0] > 0
    assert last == (size, True)


def test_a_jobs_staging_progress_is_its_owners_event_ending_done(
        gateway: LiveGateway, http: httpx.Client) -> None:
    alice, bob = user(gateway), user(gateway)
    data = uuid.uuid4().bytes * (3 * 65536 + 777)  # 3 MiB and a bit: several chunks
    before = last_id(gateway)
    response = http.post("/api/v1/jobs", headers=alice, json={
        "name": "staged", "executable": "sh", "site": "local",
        "args": ["-c", "mkdir out && cat in/data.bin in/data.bin > out/twice.bin"],
        "inputs": [{"source": f"upload:{uploaded(http, alice, data)}", "dest": "in/data.bin"}],
        "outputs": ["out/*"], "outputs_mode": "fetch"})
    assert response.status_code == 202, response.text
    job_id = response.json()["id"]
    deadline = time.monotonic() + 180
    while not JobState(http.get(f"/api/v1/jobs/{job_id}", headers=alice)
                       .json()["state"]).is_final:
        assert time.monotonic() < deadline, "the job did not end"
        time.sleep(0.1)
    assert http.get(f"/api/v1/jobs/{job_id}", headers=alice).json()["state"] == "COMPLETED"
    mine = replayed(http, alice, before, {"job": job_id})
    staging = [e for e in mine if e["type"] == JOB_STAGING_TYPE]
    assert all(e["subject"] == job_id and e["source"].endswith("/api/v1/jobs")
               and e["data"]["job"]["id"] == job_id for e in staging)
    ins = [e for e in staging if e["data"]["direction"] == "in"]
    outs = [e for e in staging if e["data"]["direction"] == "out"]
    assert staging == ins + outs
    moved(ins, "in", "in/data.bin", len(data))
    moved(outs, "out", "out/twice.bin", 2 * len(data))
    # An input is done with the hand-over to the site (just before QUEUED, in its
    # transaction), an output with the job's end (the attempt's own changes aside).
    mine = [e for e in mine if e["type"] in (JOB_STATE_TYPE, JOB_STAGING_TYPE)]
    queued = mine[mine.index(ins[-1]) + 1]
    assert (queued["type"], queued["data"]["to"]) == (JOB_STATE_TYPE, "QUEUED")
    assert "staged 1 input(s)" in queued["data"]["reason"]
    ended = mine[mine.index(outs[-1]) + 1]
    assert (ended["type"], ended["data"]["to"]) == (JOB_STATE_TYPE, "COMPLETED")
    assert ended == mine[-1]
    assert replayed(http, bob, before) == []
    assert replayed(http, alice, before, {"type": JOB_STAGING_TYPE, "job": job_id}) == staging


def test_a_queued_jobs_new_predicted_start_is_its_owners_event(
        gateway: LiveGateway, http: httpx.Client) -> None:
    (alice_id, alice), bob, auditor = account(gateway), user(gateway), user(gateway,
                                                                           ("auditor",))
    before = last_id(gateway)
    now = datetime.now(UTC)
    start = now + timedelta(hours=1)
    with transaction(gateway.runtime.sessions) as session:
        bf.site(session, "alpha")
        project = bf.project(session, alice_id)
        job_id = bf.job(session, alice_id, project.id, "alpha")
        attempt = Attempt(job_id=job_id, number=1, site_name="alpha", tag="gw-p",
                          native_id="9", state=AttemptState.QUEUED, workdir="/tmp/p")
        session.add(attempt)
        session.flush()
        announce(session, [Announcement(attempt.id, job_id, "alpha", start,
                                        start - timedelta(hours=1), "queue projection")],
                 now, "worker")
    [seen] = replayed(http, alice, before)
    assert (seen["type"], seen["subject"]) == (JOB_PREDICTION_TYPE, job_id)
    assert seen["source"].endswith("/api/v1/jobs")
    stamp = start.isoformat().replace("+00:00", "Z")
    assert seen["data"] == {
        "predicted_start": stamp, "previous": now.isoformat().replace("+00:00", "Z"),
        "site": "alpha", "basis": "queue projection",
        "job": {"id": job_id, "name": "j", "site": "alpha", "project": project.name}}
    assert replayed(http, bob, before) == []
    assert [e for e in replayed(http, auditor, before, {"type": JOB_PREDICTION_TYPE})
            if e["subject"] == job_id] == [seen]


def test_a_workflows_and_its_steps_changes_are_its_owners_events(
        gateway: LiveGateway, http: httpx.Client) -> None:
    alice, bob = user(gateway), user(gateway)
    before = last_id(gateway)
    made = http.post("/api/v1/workflows", headers=alice, json={
        "name": "two", "steps": {
            "first": {"job": {"executable": "sh", "args": ["-c", "true"], "site": "local"}},
            "second": {"needs": ["first"], "job": {
                "executable": "sh", "args": ["-c", "true"], "site": "local"}}}})
    assert made.status_code in (201, 202), made.text
    workflow_id = made.json()["id"]
    deadline = time.monotonic() + 180
    while http.get(f"/api/v1/workflows/{workflow_id}", headers=alice).json()["state"] \
            not in ("completed", "failed", "cancelled"):
        assert time.monotonic() < deadline, "the workflow did not end"
        time.sleep(0.1)
    mine = replayed(http, alice, before, {"workflow": workflow_id})
    states = [e for e in mine if e["type"] == WORKFLOW_STATE_TYPE]
    assert states and states[-1]["data"]["state"] == "completed"
    assert all(e["subject"] == workflow_id and e["source"].endswith("/api/v1/workflows")
               for e in states)
    steps = [e for e in mine if e["type"] == WORKFLOW_STEP_TYPE]
    assert {e["data"]["step"] for e in steps} >= {"first", "second"}, steps
    # The filter passes the steps' jobs' states too, and the workflow's end comes last.
    assert {e["type"] for e in mine} >= {JOB_STATE_TYPE, WORKFLOW_STATE_TYPE}
    assert mine[-1] == states[-1]
    assert replayed(http, bob, before) == []


def test_a_sites_state_change_is_an_event_for_admins_only(gateway: LiveGateway,
                                                          http: httpx.Client) -> None:
    alice, admin = user(gateway), user(gateway, ("admin",))
    before = last_id(gateway)
    site = f"s{uuid.uuid4().hex[:6]}"
    with transaction(gateway.runtime.sessions) as session:
        bf.site(session, site)
        record_site_state(session, site, "up", None)  # no change: no event
        record_site_state(session, site, "down", "ssh: connection refused")
        record_site_state(session, site, "down", "ssh: connection refused")
    seen = [e for e in replayed(http, admin, before, {"type": SITE_STATE_TYPE})
            if e["subject"] == site]
    assert [e["data"] for e in seen] == [{"site": site, "from": "up", "to": "down",
                                          "reason": "ssh: connection refused"}]
    assert seen[0]["source"].endswith("/api/v1/sites")
    assert replayed(http, alice, before) == []


def test_an_allocations_use_and_suspension_reach_its_pis_not_its_members(
        gateway: LiveGateway, http: httpx.Client) -> None:
    (pi_id, pi), (member_id, member) = account(gateway), account(gateway)
    other, auditor = user(gateway), user(gateway, ("auditor",))
    before = last_id(gateway)
    now = datetime.now(UTC)  # what the events say happened: within the replay window
    with transaction(gateway.runtime.sessions) as session:
        bf.site(session, "alpha")
        project = bf.project(session, pi_id)
        projects.add_member(session, project.id, pi_id, PI_ROLE)
        projects.add_member(session, project.id, member_id, "member")
        granted = allocations.grant(session, Grant(project.name, "*", 10_000, NOW - YEAR,
                                                   NOW + YEAR), {"alpha"}, "committee",
                                    "award", now)
        # Two charges of 5.5 and 3 SU (half an hour on 11 and 6 cores) of a 10 SU
        # award: past 50%, then past 80%.
        for cores in (11, 6):
            job = bf.job(session, member_id, project.id)
            bank.hold(session, job, Payer(project.id, project.name), "alpha", cores * 500,
                      now, "member")
            row, record = bf.usage_row(session, job, "alpha", uuid.uuid4().hex[:8],
                                       elapsed=1800, cores=cores)
            charge = charge_for(record, Rate(core_hour_milli=1000), walltime_seconds=3600,
                                refund_cap_milli=0)
            bank.settle(session, job, [(row, charge)], now, "worker")
        allocations.set_status(session, granted.id, "suspended", "committee", "no report", now)
    seen = replayed(http, pi, before)
    assert [(e["type"], e["subject"]) for e in seen] == [
        (ALLOCATION_USAGE_TYPE, str(granted.id)), (ALLOCATION_USAGE_TYPE, str(granted.id)),
        (ALLOCATION_STATUS_TYPE, str(granted.id))]
    assert [e["data"]["threshold_percent"] for e in seen[:2]] == [50, 80]
    assert (seen[0]["data"]["used_su"], seen[1]["data"]["used_su"]) == (5.5, 8.5)
    assert seen[0]["data"]["project"] == project.name and seen[0]["data"]["awarded_su"] == 10
    assert seen[2]["data"] == {"allocation": granted.id, "project": project.name,
                                    "pool": "*", "from": "active", "to": "suspended",
                                    "reason": "no report", "actor": "committee"}
    assert all(e["source"].endswith("/api/v1/allocations") for e in seen)
    # The member's jobs were charged: they see no state event of them (none was written
    # by these fixtures) and none of the allocation's.
    assert replayed(http, member, before) == []
    assert replayed(http, other, before) == []
    assert [e for e in replayed(http, auditor, before)
            if e["type"].startswith("org.gridgate.allocation.")] == seen
    # The project filter passes the project's allocation events to its PI.
    assert replayed(http, pi, before, {"project": project.name}) == seen


def test_thresholds_are_passed_once_upwards_only() -> None:
    assert crossed(0, 4_999, 10_000) == []
    assert crossed(0, 5_000, 10_000) == [50]
    assert crossed(4_999, 10_000, 10_000) == [50, 80, 100]
    assert crossed(5_000, 7_999, 10_000) == []  # 50 was passed before
    assert crossed(9_000, 6_000, 10_000) == []  # a refund passes nothing
    assert crossed(0, 1, 0) == []  # nothing awarded: no shares of it
