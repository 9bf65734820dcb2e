"""Two more event types, against a live gateway (uvicorn, worker, local site) with the
bank on: every state change of a job's attempts (its owner's, about the job), and a lien
refused (its project's PIs' and its submitter's, about the allocation): at submission
(the job not kept: the refusal is recorded after the rollback) and when the worker
draws a job's lien again for another site."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from sqlalchemy import func, select

from gateway.auth.project_access import PI_ROLE
from gateway.db.engine import transaction
from gateway.db.models import Event, Job, Project
from gateway.domain.states import JobState
from gateway.repositories.events.feed import FeedFilter, FeedRow
from gateway.repositories.identity import projects
from gateway.repositories.jobs import rows as jobs
from gateway.schemas.events import (
    ALLOCATION_REFUSED_TYPE,
    ATTEMPT_STATE_TYPE,
    JOB_PREDICTION_TYPE,
    JOB_STATE_TYPE,
)
from gateway.services.money import allocations, budget
from gateway.services.money.allocations import Grant
from gateway.services.money.bank import Payer
from tests.api.test_event_kinds import last_id, replayed
from tests.api.test_event_stream import account, user
from tests.client.live import LiveGateway, gateway_on
from tests.services import bank_fixtures as bf
from tests.waiting_jobs import let_jobs_go, waits


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with gateway_on(request, tmp_path_factory.mktemp("gateway"), allocations_enforced=True,
                    events_heartbeat_seconds=0.05, events_poll_seconds=0.05) as gw:
        yield gw


@pytest.fixture
def http(gateway: LiveGateway) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=gateway.url, timeout=60) as client:
        yield client


def grant(gateway: LiveGateway, project: str, milli: int) -> int:
    """An allocation of `milli` milli-SU for the project, spendable anywhere, now."""
    now = datetime.now(UTC)
    with transaction(gateway.runtime.sessions) as session:
        return allocations.grant(session, Grant(project, "*", milli, now - timedelta(days=1),
                                                now + timedelta(days=30)), {"local"},
                                 "committee", "award", now).id


def personal(gateway: LiveGateway, user_id: str) -> str:
    with gateway.runtime.sessions() as session:
        ref = jobs.personal_project(session.connection(), user_id)
    assert ref is not None
    return ref.name


def wait_state(http: httpx.Client, headers: dict[str, str], job_id: str,
               done: set[str]) -> str:
    deadline = time.monotonic() + 180
    while (state := http.get(f"/api/v1/jobs/{job_id}", headers=headers).json()["state"]) \
            not in done:
        assert time.monotonic() < deadline, f"job {job_id} stayed {state}"
        time.sleep(0.1)
    return str(state)


def test_an_attempts_life_is_its_owners_events_in_order_with_the_jobs(
        gateway: LiveGateway, http: httpx.Client) -> None:
    alice_id, alice = account(gateway)
    bob, auditor = user(gateway), user(gateway, ("auditor",))
    grant(gateway, personal(gateway, alice_id), 10_000_000)
    before = last_id(gateway)
    made = http.post("/api/v1/jobs", headers=alice, json={
        "name": "held", "executable": "sh", "args": ["-c", waits()], "site": "local"})
    assert made.status_code == 202, made.text
    job_id = made.json()["id"]
    # Seen RUNNING before it is let go: the worker saw the attempt run.
    assert wait_state(http, alice, job_id, {"RUNNING", "FAILED"}) == "RUNNING"
    assert let_jobs_go(gateway.runtime, job_id)
    assert wait_state(http, alice, job_id, {s.value for s in JobState if s.is_final}) \
        == "COMPLETED"
    mine = replayed(http, alice, before, {"job": job_id})
    tried = [e for e in mine if e["type"] == ATTEMPT_STATE_TYPE]
    assert [(e["data"]["from"], e["data"]["to"]) for e in tried] == [
        (None, "SUBMITTING"), ("SUBMITTING", "QUEUED"), ("QUEUED", "RUNNING"),
        ("RUNNING", "COMPLETED")]
    assert all(e["subject"] == job_id and e["source"].endswith("/api/v1/jobs")
               and e["data"]["attempt"] == 1 and e["data"]["site"] == "local"
               and e["data"]["job"] == {"id": job_id, "name": "held", "site": "local",
                                        "project": personal(gateway, alice_id)}
               for e in tried)
    assert tried[0]["data"]["native_id"] is None
    native = tried[1]["data"]["native_id"]
    assert native and all(e["data"]["native_id"] == native for e in tried[1:])
    assert tried[-1]["data"]["exit_code"] == 0
    # One order with the job's own changes: each attempt change before the job's.
    states = [e for e in mine if e["type"] == JOB_STATE_TYPE]
    assert [e["data"]["to"] for e in states] == [
        "ACCEPTED", "STAGING_IN", "QUEUED", "RUNNING", "COMPLETED"]
    for attempt_to, job_to in (("QUEUED", "QUEUED"), ("RUNNING", "RUNNING"),
                               ("COMPLETED", "COMPLETED")):
        [moved] = [e for e in tried if e["data"]["to"] == attempt_to]
        [followed] = [e for e in states if e["data"]["to"] == job_to]
        assert int(moved["id"]) < int(followed["id"])
    # (and, while it waits, its predicted start: the local site's queue is read too)
    assert {e["type"] for e in mine} <= {ATTEMPT_STATE_TYPE, JOB_STATE_TYPE, JOB_PREDICTION_TYPE}
    # The type filter; nobody else but an auditor; the job's history keeps to its states.
    assert replayed(http, alice, before, {"type": ATTEMPT_STATE_TYPE}) == tried
    assert replayed(http, bob, before) == []
    audited = replayed(http, auditor, before)
    assert all(e in audited for e in tried)
    history = http.get(f"/api/v1/jobs/{job_id}/events", headers=alice).json()["items"]
    assert [e["to_state"] for e in history] == [e["data"]["to"] for e in states]


def _pi_project(gateway: LiveGateway, allocation_milli: int
                ) -> tuple[tuple[str, dict[str, str]], tuple[str, dict[str, str]],
                           dict[str, str], dict[str, str], str, int]:
    """A project with a PI, a submitting member and another member, a small allocation:
    (pi, submitter), the other member's and an outsider's headers, its name and the
    allocation's id."""
    pi, submitter = account(gateway), account(gateway)
    (other_id, other), outsider = account(gateway), user(gateway)
    with transaction(gateway.runtime.sessions) as session:
        project = bf.project(session, pi[0])
        projects.add_member(session, project.id, pi[0], PI_ROLE)
        for member in (submitter[0], other_id):
            projects.add_member(session, project.id, member, "member")
        name = project.name
    return pi, submitter, other, outsider, name, grant(gateway, name, allocation_milli)


def test_a_refused_submission_is_one_event_for_the_pis_and_the_submitter(
        gateway: LiveGateway, http: httpx.Client) -> None:
    (_, pi), (submitter_id, submitter), other, outsider, project, allocation = \
        _pi_project(gateway, 1)
    auditor = user(gateway, ("auditor",))
    before = last_id(gateway)
    refused = http.post("/api/v1/jobs", headers=submitter, json={
        "name": "too-big", "executable": "true", "site": "local", "project": project})
    # The answer as before: the problem names the quote and what is available, no more.
    assert refused.status_code == 422, refused.text
    problem = refused.json()
    assert problem["title"] == "Insufficient allocation"
    assert problem["project"] == project and problem["available_su"] == "0.001"
    assert set(problem) == {"type", "title", "status", "detail", "instance", "quote_su",
                            "available_su", "project"}
    assert problem["detail"].startswith(f"Project '{project}' cannot cover this job")
    with gateway.runtime.sessions() as session:
        written = session.scalars(select(Event).where(Event.id > before)).all()
    [event] = [e for e in written if e.type == ALLOCATION_REFUSED_TYPE]
    assert event.job_id is None and event.owner_id == submitter_id
    with gateway.runtime.sessions() as session:  # the job was not kept
        assert session.scalar(select(func.count()).select_from(Job)
                              .where(Job.owner_id == submitter_id)) == 0
    seen = replayed(http, pi, before, {"type": ALLOCATION_REFUSED_TYPE})
    assert len(seen) == 1 and seen[0]["subject"] == str(allocation)
    assert seen[0]["source"].endswith("/api/v1/allocations")
    data = seen[0]["data"]
    assert data["allocation"] == allocation and data["project"] == project
    assert data["site"] == "local" and data["available_su"] == 0.001
    assert data["asked_su"] == float(problem["quote_su"]) > 0.001
    assert data["job_name"] == "too-big" and data["job_id"] is None and data["actor"]
    assert replayed(http, submitter, before) == seen
    assert replayed(http, pi, before, {"project": project}) == seen
    assert replayed(http, other, before) == []
    assert replayed(http, outsider, before) == []
    assert seen[0] in replayed(http, auditor, before)


def test_a_lien_the_worker_cannot_draw_again_is_an_event_in_its_transaction(
        gateway: LiveGateway, http: httpx.Client) -> None:
    (_, pi), (owner_id, owner), other, outsider, project, allocation = \
        _pi_project(gateway, 1)
    before = last_id(gateway)
    now = datetime.now(UTC)
    with transaction(gateway.runtime.sessions) as session:
        project_id = int(session.scalar(select(Project.id).where(Project.name == project)))
        job_id = bf.job(session, owner_id, project_id)
        why = budget.draw(session, Payer(project_id, project),
                          budget.Drawn(job_id, "j", owner_id), "local", 5_000, now, "worker")
        assert why is not None and "0.001 SU available at 'local'" in why
    seen = replayed(http, pi, before)
    assert [(e["type"], e["subject"]) for e in seen] == [
        (ALLOCATION_REFUSED_TYPE, str(allocation))]
    assert seen[0]["data"] == {"allocation": allocation, "project": project,
                               "site": "local", "asked_su": 5.0, "available_su": 0.001,
                               "actor": "worker", "job_name": "j", "job_id": job_id}
    assert replayed(http, owner, before) == seen
    assert replayed(http, other, before) == []
    assert replayed(http, outsider, before) == []


def _row(kind: str, owner_id: str | None, project_id: int | None) -> FeedRow:
    return {"id": 1, "type": kind, "job_id": None, "at": datetime.now(UTC),
            "from_state": None, "to_state": None, "reason": None, "actor": "a",
            "raw_state": None, "subject": "allocation:1", "project_id": project_id,
            "data": {}, "job_name": None, "site_name": None, "project_name": "p",
            "owner_id": owner_id, "workflow_id": None}


def test_a_live_stream_passes_a_refusal_to_the_pis_and_the_submitter_only() -> None:
    # The live stream's filter (FeedFilter.passes), as the replays' SQL above.
    refusal = _row(ALLOCATION_REFUSED_TYPE, "submitter", 7)
    assert FeedFilter("pi", None, pi_projects=(7,)).passes(refusal)
    assert FeedFilter("submitter", None).passes(refusal)
    assert not FeedFilter("member", None).passes(refusal)
    assert not FeedFilter("outsider", None, pi_projects=(8,)).passes(refusal)
    assert FeedFilter(None, None).passes(refusal)  # admins and auditors
    # An owner reads no other allocation event by owning it.
    assert not FeedFilter("submitter", None).passes(
        _row("org.gridgate.allocation.status", "submitter", 7))
