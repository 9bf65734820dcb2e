"""Webhooks end to end in one process: the API creates subscriptions, the worker's step
(gateway.worker.outbox.webhooks) fans the event outbox out and POSTs to a real receiver on
127.0.0.1. Every delivery is verified with the `standardwebhooks` library and parsed
with the CloudEvents SDK. Time is passed in as `now`; nothing sleeps."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import standardwebhooks
from cloudevents.core.bindings.http import HTTPMessage, from_http
from cloudevents.core.formats.json import JSONFormat
from fastapi.testclient import TestClient
from sqlalchemy import select

from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Event
from gateway.db.webhook_models import WebhookDelivery
from gateway.repositories import webhooks as repo
from gateway.runtime import Runtime
from gateway.services.webhooks import delivery as service
from gateway.settings import Settings
from gateway.worker.context import StepContext
from gateway.worker.outbox.webhooks import SEND_THREADS, deliver_webhooks
from tests.conftest import MakeUser, TestUser
from tests.worker.webhook_receiver import Receiver, receiver

LIFE = ["STAGING_IN", "QUEUED", "RUNNING", "COMPLETED"]


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    # A short lease: renewed every third of it while a worker sends.
    return Settings(data_dir=tmp_path / "data", database_url=database_url, run_worker=False,
                    public_url="http://gateway.test", webhook_allowed_ranges="127.0.0.0/8",
                    webhook_lease_seconds=1.5)


@pytest.fixture
def target() -> Iterator[Receiver]:
    with receiver() as r:
        yield r


def _job(client: TestClient, user: TestUser) -> str:
    response = client.post("/api/v1/jobs", headers=user.headers,
                           json={"name": "hooked", "executable": "/bin/true"})
    assert response.status_code == 202, response.text
    return str(response.json()["id"])


def _life(runtime: Runtime, job_id: str) -> None:
    """The rest of a job's life, written to the outbox as the lifecycle writes it."""
    with transaction(runtime.sessions) as session:
        before = "ACCEPTED"
        for state in LIFE:
            session.add(Event(job_id=job_id, at=utcnow(), from_state=before, to_state=state,
                              reason=f"now {state}", actor="test"))
            before = state


def _hook(client: TestClient, user: TestUser, url: str, **extra: Any) -> dict[str, Any]:
    response = client.post("/api/v1/webhooks", headers=user.headers, json={"url": url, **extra})
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    assert created["secret"].startswith("whsec_")
    return created


def _drain(ctx: StepContext, now: Any = None) -> None:
    # One job's deliveries go out one per cycle (each waits for the one before).
    for _ in range(20):
        if not deliver_webhooks(ctx, now):
            return
    raise AssertionError("deliveries kept coming")


def _verified(secret: str, target: Receiver) -> list[dict[str, Any]]:
    """Every request verified by the Standard Webhooks library, parsed by the SDK."""
    documents = []
    for request in target.requests:
        standardwebhooks.Webhook(secret).verify(request.body, request.headers)
        event = from_http(HTTPMessage(request.headers, request.body), JSONFormat())
        assert event.get_specversion() == "1.0"
        assert event.get_type() == "org.gridgate.job.state"
        assert event.get_id() == request.headers["webhook-id"]
        documents.append({"id": event.get_id(), "subject": event.get_subject(),
                          "data": event.get_data()})
    return documents


def test_a_job_s_life_arrives_in_order_signed_and_only_the_owner_s(
        runtime: Runtime, client: TestClient, make_user: MakeUser, target: Receiver) -> None:
    alice, bob = make_user(), make_user()
    hook = _hook(client, alice, target.url)
    other = _job(client, bob)
    job = _job(client, alice)
    _life(runtime, other)
    _life(runtime, job)
    _drain(StepContext.of(runtime, "w1"))
    documents = _verified(hook["secret"], target)
    assert {d["subject"] for d in documents} == {job}, "another user's events arrived"
    assert [d["data"]["to"] for d in documents] == ["ACCEPTED", *LIFE]
    assert [int(d["id"]) for d in documents] == sorted(int(d["id"]) for d in documents)
    # The body is the event stream's own document.
    assert json.loads(target.requests[-1].body)["source"] == "http://gateway.test/api/v1/jobs"
    listed = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries", headers=alice.headers)
    assert [d["state"] for d in listed.json()["items"]] == ["delivered"] * 5
    # Nothing is sent twice once recorded.
    _drain(StepContext.of(runtime, "w2"))
    assert len(target.requests) == 5


def test_a_failed_delivery_is_sent_again_with_the_same_webhook_id(
        runtime: Runtime, client: TestClient, make_user: MakeUser, target: Receiver) -> None:
    alice = make_user()
    hook = _hook(client, alice, target.url)
    target.statuses = [500]
    job = _job(client, alice)
    ctx, now = StepContext.of(runtime, "w1"), utcnow()
    assert deliver_webhooks(ctx, now)
    [failed] = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries",
                          headers=alice.headers).json()["items"]
    assert failed["state"] == "pending" and failed["last_status"] == 500
    assert failed["attempts"] == 1 and "HTTP 500" in failed["last_error"]
    # Not due yet: the back-off holds it.
    assert not deliver_webhooks(ctx, now)
    assert deliver_webhooks(ctx, now + timedelta(hours=2))
    first, second = target.requests
    assert first.headers["webhook-id"] == second.headers["webhook-id"] == failed["message_id"]
    assert [d["subject"] for d in _verified(hook["secret"], target)] == [job, job]
    [done] = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries",
                        headers=alice.headers).json()["items"]
    assert done["state"] == "delivered" and done["attempts"] == 2


def test_a_day_of_failures_disables_the_subscription_with_a_reason(
        runtime: Runtime, client: TestClient, make_user: MakeUser, target: Receiver) -> None:
    alice = make_user()
    hook = _hook(client, alice, target.url)
    target.always = 503
    job = _job(client, alice)
    _life(runtime, job)
    ctx, start = StepContext.of(runtime, "w1"), utcnow()
    for hours in range(0, 26, 2):
        deliver_webhooks(ctx, start + timedelta(hours=hours))
    shown = client.get(f"/api/v1/webhooks/{hook['id']}", headers=alice.headers).json()
    assert shown["state"] == "disabled"
    assert "failed for 2" in shown["disabled_reason"] and "HTTP 503" in shown["disabled_reason"]
    # The job's later events waited behind the failing one; none was sent.
    assert {r.headers["webhook-id"] for r in target.requests} == {
        target.requests[0].headers["webhook-id"]}
    sent = len(target.requests)
    assert not deliver_webhooks(ctx, start + timedelta(hours=30))
    assert len(target.requests) == sent
    # Redelivering enables it again: the failed one first, then the rest in order.
    target.always = None
    items = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries",
                       headers=alice.headers).json()["items"]
    failed = next(d for d in items if d["state"] == "failed")
    again = client.post(f"/api/v1/webhooks/{hook['id']}/deliveries/{failed['id']}/redeliver",
                        headers=alice.headers)
    assert again.status_code == 200, again.text
    _drain(ctx, start + timedelta(hours=31))
    tos = [d["data"]["to"] for d in _verified(hook["secret"], target)[sent:]]
    assert tos == ["ACCEPTED", *LIFE]


def test_a_name_resolving_to_a_private_address_is_refused_at_connect_time(
        runtime: Runtime, client: TestClient, make_user: MakeUser, target: Receiver,
        monkeypatch: pytest.MonkeyPatch) -> None:
    alice = make_user()
    port = int(target.url.rsplit(":", 1)[1].split("/")[0])
    real = socket.getaddrinfo
    answer = ["127.0.0.1"]

    def rebinding(host: str, *args: Any, **kwargs: Any) -> Any:
        if host == "hooks.example.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (answer[0], port))]
        return real(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    hook = _hook(client, alice, f"http://hooks.example.test:{port}/hook")
    answer[0] = "10.1.2.3"  # the name now points into a private network
    _job(client, alice)
    assert deliver_webhooks(StepContext.of(runtime, "w1"))
    assert target.requests == []
    [item] = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries",
                        headers=alice.headers).json()["items"]
    assert item["state"] == "pending" and "10.1.2.3" in item["last_error"]
    assert "refused" in item["last_error"]


@pytest.mark.postgres
@pytest.mark.parametrize("database_kind", ["postgresql"], indirect=True)
def test_two_workers_claiming_at_once_never_both_send_one_delivery(
        runtime: Runtime, client: TestClient, make_user: MakeUser, target: Receiver) -> None:
    alice = make_user()
    _hook(client, alice, target.url)
    _job(client, alice)
    with transaction(runtime.sessions) as session:
        service.fan_out(session, 10, None)
    now = utcnow()
    with transaction(runtime.sessions) as first:
        mine = [item for run in service.claim(first, runtime.settings, "w1", now, 10)
                for item in run]
        # The second worker claims while the first's claim is not committed yet.
        with transaction(runtime.sessions) as second:
            assert service.claim(second, runtime.settings, "w2", now, 10) == []
    assert len(mine) == 1
    # Committed: the lease keeps it the first worker's until it runs out.
    with transaction(runtime.sessions) as second:
        assert service.claim(second, runtime.settings, "w2", now, 10) == []
    later = now + timedelta(hours=1)
    with transaction(runtime.sessions) as second:
        [[again]] = service.claim(second, runtime.settings, "w2", later, 10)
    # A worker that died after sending: the redelivery carries the same webhook-id.
    assert again.message_id == mine[0].message_id and again.body == mine[0].body


def test_many_jobs_arrive_once_each_in_order_per_job(
        runtime: Runtime, client: TestClient, make_user: MakeUser, target: Receiver) -> None:
    # Runs of one job's deliveries are claimed together beside other jobs' runs: none is
    # sent twice, none skipped, and each job's events arrive in order.
    alice = make_user()
    hook = _hook(client, alice, target.url)
    jobs = [_job(client, alice) for _ in range(6)]
    for job in jobs:
        _life(runtime, job)
    _drain(StepContext.of(runtime, "w1"))
    documents = _verified(hook["secret"], target)
    assert len({d["id"] for d in documents}) == len(documents) == 5 * len(jobs)
    for job in jobs:
        assert [d["data"]["to"] for d in documents if d["subject"] == job] == [
            "ACCEPTED", *LIFE]


def test_a_failure_inside_a_run_holds_the_rest_of_it_back(
        runtime: Runtime, client: TestClient, make_user: MakeUser, target: Receiver) -> None:
    alice = make_user()
    hook = _hook(client, alice, target.url)
    job = _job(client, alice)
    _life(runtime, job)
    target.statuses = [200, 200, 500]  # the third of the job's five fails
    ctx, now = StepContext.of(runtime, "w1"), utcnow()
    assert deliver_webhooks(ctx, now)
    assert len(target.requests) == 3
    assert not deliver_webhooks(ctx, now)  # the failed one waits out its back-off first
    listed = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries",
                        headers=alice.headers).json()["items"]
    assert [(d["state"], d["attempts"]) for d in reversed(listed)] == [
        ("delivered", 1), ("delivered", 1), ("pending", 1), ("pending", 0), ("pending", 0)]
    _drain(ctx, now + timedelta(hours=2))
    tos = [d["data"]["to"] for d in _verified(hook["secret"], target)]
    assert tos == ["ACCEPTED", "STAGING_IN", "QUEUED", "QUEUED", "RUNNING", "COMPLETED"]


def _leases(runtime: Runtime) -> list[Any]:
    with runtime.sessions() as session:
        return list(session.scalars(select(WebhookDelivery.lease_until)
                                    .order_by(WebhookDelivery.id)))


def test_a_dead_worker_s_deliveries_wait_only_for_its_short_lease(
        runtime: Runtime, client: TestClient, make_user: MakeUser, target: Receiver) -> None:
    alice = make_user()
    hook = _hook(client, alice, target.url)
    job = _job(client, alice)
    _life(runtime, job)
    with transaction(runtime.sessions) as session:
        service.fan_out(session, 10, None)
    now, lease = utcnow(), timedelta(seconds=runtime.settings.webhook_lease_seconds)
    # w1 leases the job's run, then dies before sending or recording it.
    with transaction(runtime.sessions) as session:
        [run] = service.claim(session, runtime.settings, "w1", now, 10, 16)
    assert len(run) == 5
    ctx = StepContext.of(runtime, "w2")
    assert not deliver_webhooks(ctx, now + lease - timedelta(seconds=1))
    assert target.requests == []
    # Once the lease (not a batch's worth of timeouts) ran out, w2 sends them, in order.
    _drain(ctx, now + lease + timedelta(seconds=1))
    documents = _verified(hook["secret"], target)
    assert [d["id"] for d in documents] == [item.message_id for item in run]
    assert [d["data"]["to"] for d in documents] == ["ACCEPTED", *LIFE]
    # w1, back, finds it no longer holds them.
    with transaction(runtime.sessions) as session:
        assert not service.renew(session, runtime.settings, "w1",
                                 [item.delivery_id for item in run], utcnow())


def test_a_worker_renews_its_lease_while_it_sends(
        runtime: Runtime, client: TestClient, make_user: MakeUser, target: Receiver) -> None:
    alice = make_user()
    _hook(client, alice, target.url)
    _job(client, alice)
    target.hold = threading.Event()
    sender = threading.Thread(target=deliver_webhooks, args=(StepContext.of(runtime, "w1"),))
    sender.start()
    try:
        deadline = time.monotonic() + 120
        while not target.requests or _leases(runtime)[0] is None:
            assert time.monotonic() < deadline, "the delivery was never sent"
            time.sleep(0.01)
        [first] = _leases(runtime)
        # The receiver has not answered: the lease is renewed meanwhile.
        while _leases(runtime)[0] <= first:
            assert time.monotonic() < deadline, "the lease was never renewed"
            time.sleep(0.05)
        with transaction(runtime.sessions) as session:
            assert service.claim(session, runtime.settings, "w2",
                                 first + timedelta(milliseconds=1), 10) == []
    finally:
        target.hold.set()
        sender.join()
    assert _leases(runtime) == [None]
    assert len(target.requests) == 1


def test_a_delivery_s_subject_is_its_job_else_what_the_event_is_about_cut(
        runtime: Runtime, client: TestClient, make_user: MakeUser, target: Receiver) -> None:
    alice = make_user()
    hook = _hook(client, alice, target.url)
    job = _job(client, alice)
    with transaction(runtime.sessions) as session:
        about = Event(job_id=None, subject="s" * 80, at=utcnow(), actor="test")
        of_job = Event(job_id=job, subject="ignored", at=utcnow(), actor="test")
        session.add_all([about, of_job])
        session.flush()
        assert repo.add_pending(session, hook["id"], [about.id, of_job.id], 36) == 2
        made = session.execute(select(WebhookDelivery.event_id, WebhookDelivery.subject,
                                      WebhookDelivery.state, WebhookDelivery.next_at)
                               .where(WebhookDelivery.webhook_id == hook["id"])
                               .order_by(WebhookDelivery.event_id)).all()
    assert [(row.subject, row.state) for row in made] == [("s" * 36, "pending"),
                                                          (job, "pending")]


def test_a_target_that_does_not_answer_costs_a_batch_one_timeout_per_thread(
        runtime: Runtime, client: TestClient, make_user: MakeUser, target: Receiver,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime.settings, "webhook_timeout_seconds", 0.3)
    alice = make_user()
    hook = _hook(client, alice, target.url)
    jobs = [_job(client, alice) for _ in range(3 * SEND_THREADS)]
    target.hold = threading.Event()  # it reads each request, and never answers in time
    try:
        assert deliver_webhooks(StepContext.of(runtime, "w1"))
    finally:
        target.hold.set()
    # Each thread's first delivery timed out; the rest were not tried, and wait with them.
    assert 0 < len(target.requests) <= SEND_THREADS
    items = client.get(f"/api/v1/webhooks/{hook['id']}/deliveries?limit=100",
                       headers=alice.headers).json()["items"]
    assert len(items) == len(jobs)
    assert all(d["state"] == "pending" and d["attempts"] == 1 for d in items)
    assert sum("not tried" in d["last_error"] for d in items) >= len(jobs) - SEND_THREADS
