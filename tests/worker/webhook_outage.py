"""A webhook receiver down for a while, then back (issue 29): one subscription, jobs made
and moved through their lives while the receiver refuses connections, the worker's
webhooks step running as its outbox thread runs it. Measured: how long after the
receiver's return every event has arrived; checked: every event arrived, each job's in
id order (a resend of one already seen, same webhook-id, is counted, not an error).
Shared by benchmarks/webhook_outage.py (600 s) and tests/worker/test_webhook_outage.py.
"""

from __future__ import annotations

import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select

from gateway.api.app import create_app
from gateway.auth.accounts import create_local_user
from gateway.auth.tokens import issue_access_token
from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Event
from gateway.db.webhook_models import WebhookDelivery
from gateway.runtime import build_runtime
from gateway.settings import Settings
from gateway.worker.context import StepContext
from gateway.worker.outbox.webhooks import close_connections, deliver_webhooks
from tests.worker.webhook_receiver import Receiver, receiver

LIFE = ["STAGING_IN", "QUEUED", "RUNNING", "COMPLETED"]


@dataclass(frozen=True)
class Outage:
    """The sizes of one run."""

    outage_seconds: float = 600.0
    jobs: int = 200
    backoff: tuple[float, float] = (5.0, 3600.0)  # the settings' default
    poll_seconds: float = 1.0  # the worker's default
    deadline_seconds: float = 3600.0  # after the return, for everything to arrive


def run(size: Outage) -> dict[str, Any]:
    """One run (see module); the result as a JSON-able document."""
    with tempfile.TemporaryDirectory(prefix="gridgate-outage-") as tmp, \
            receiver(keep_alive=True) as target:
        settings = Settings(data_dir=Path(tmp) / "data", run_worker=False,
                            public_url="http://gateway.test",
                            webhook_allowed_ranges="127.0.0.0/8",
                            webhook_backoff_seconds=size.backoff,
                            worker_poll_seconds=size.poll_seconds)
        runtime = build_runtime(settings)
        with transaction(runtime.sessions) as session:
            user_id = create_local_user(session, "outage", "outage-password-1").id
        token = issue_access_token(settings, runtime.keys, subject=user_id, client_id="o",
                                   scope="jobs:read jobs:write", username="outage").token
        headers = {"Authorization": f"Bearer {token}"}
        stop = threading.Event()
        worker = threading.Thread(target=_worker, args=(StepContext.of(runtime, "w"), stop,
                                                        size.poll_seconds), daemon=True)
        try:
            with TestClient(create_app(runtime=runtime)) as api:
                created = api.post("/api/v1/webhooks", headers=headers,
                                   json={"url": target.url})
                assert created.status_code == 201, created.text
                worker.start()
                target.down()
                down_at = time.monotonic()
                jobs = _jobs_meanwhile(api, headers, runtime, size)
                # Down for the whole time, and until a delivery was refused at least once.
                while time.monotonic() - down_at < size.outage_seconds or not _refused(runtime):
                    _until(down_at + size.deadline_seconds, "a delivery refused")
                    time.sleep(0.05)
                target.up()
                back_at = time.monotonic()
                truth = _truth(runtime, jobs)
                while not set(truth) <= _received(target):
                    _until(back_at + size.deadline_seconds,
                           f"{len(set(truth) - _received(target))} events delivered")
                    time.sleep(0.05)
                drained = time.monotonic() - back_at
        finally:
            stop.set()
            if worker.is_alive():
                worker.join()
            close_connections()
            refused = _refused(runtime)
            runtime.close()
        return {"outage_s": round(time.monotonic() - down_at - drained, 1), "jobs": size.jobs,
                "backoff_s": list(size.backoff), "events": len(truth),
                "deliveries_refused_meanwhile": refused,
                "all_delivered_s_after_return": round(drained, 2), **_check(target, truth)}


def _worker(ctx: StepContext, stop: threading.Event, poll: float) -> None:
    # As the worker's outbox thread: at once again while busy, else after a poll.
    while not stop.is_set():
        if not deliver_webhooks(ctx):
            stop.wait(poll)


def _jobs_meanwhile(api: TestClient, headers: dict[str, str], runtime: Any,
                    size: Outage) -> list[str]:
    """Make `jobs` jobs spread over the first nine tenths of the outage, each moved
    through its life when the next is made."""
    started = time.monotonic()
    ids: list[str] = []
    for index in range(size.jobs):
        time.sleep(max(0.0, started + index * size.outage_seconds * 0.9 / size.jobs
                       - time.monotonic()))
        response = api.post("/api/v1/jobs", headers=headers,
                            json={"name": "outage", "executable": "/bin/true"})
        assert response.status_code == 202, response.text
        ids.append(response.json()["id"])
        if len(ids) > 1:
            _life(runtime, ids[-2])
    _life(runtime, ids[-1])
    return ids


def _life(runtime: Any, job_id: str) -> None:
    with transaction(runtime.sessions) as session:
        before = "ACCEPTED"
        for state in LIFE:
            session.add(Event(job_id=job_id, at=utcnow(), from_state=before, to_state=state,
                              reason=f"now {state}", actor="outage"))
            before = state


def _refused(runtime: Any) -> int:
    """Deliveries that failed at least once."""
    with runtime.sessions() as session:
        return int(session.execute(select(func.count()).select_from(WebhookDelivery).where(
            WebhookDelivery.first_failed_at.is_not(None))).scalar_one())


def _truth(runtime: Any, jobs: list[str]) -> dict[str, str]:
    """Every event of the jobs: its id (the webhook-id) and its job."""
    with runtime.sessions() as session:
        rows = session.execute(select(Event.id, Event.job_id)
                               .where(Event.job_id.in_(jobs))).all()
    return {str(row.id): str(row.job_id) for row in rows}


def _received(target: Receiver) -> set[str]:
    return {request.headers["webhook-id"] for request in list(target.requests)}


def _check(target: Receiver, truth: dict[str, str]) -> dict[str, Any]:
    """Missing, extra, resent and out-of-order deliveries, after dedup by webhook-id."""
    seen: set[str] = set()
    last: dict[str, int] = {}
    resent = out_of_order = 0
    for request in list(target.requests):
        message = request.headers["webhook-id"]
        if message in seen:
            resent += 1
            continue
        seen.add(message)
        job = truth.get(message, "")
        if int(message) < last.get(job, 0):
            out_of_order += 1
        last[job] = max(last.get(job, 0), int(message))
    missing = len(set(truth) - seen)
    extra = len(seen - set(truth))
    return {"received": len(target.requests), "missing": missing, "unexpected": extra,
            "resent": resent, "out_of_order": out_of_order,
            "ok": missing == extra == out_of_order == 0}


def _until(deadline: float, what: str) -> None:
    if time.monotonic() > deadline:
        raise TimeoutError(f"gave up waiting for {what}")
