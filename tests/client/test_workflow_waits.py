"""`GatewayClient.wait_workflow` (what `gridgate workflow submit --wait` uses) on the event
stream of the workflow (its state, its steps, their jobs): it reads the workflow once per
event, never on a timer; against a gateway without the workflow's own events it polls
while no job of it is under way, and against one without a stream it polls. Jobs are held
by a file, never by a time."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from gateway.client import workflow_waits
from gateway.client.models import FINAL_STATES
from gateway.schemas.events import WORKFLOW_STATE_TYPE
from gateway.schemas.workflows import WorkflowOut
from tests.client.live import LiveGateway
from tests.client.test_job_waits import Counting, client_with, counting, store
from tests.waiting_jobs import let_jobs_go, waits

__all__ = ["counting", "store"]  # fixtures


def one_step(command: str) -> dict[str, Any]:
    return {"name": "held", "steps": {"only": {"job": {
        "executable": "/bin/sh", "args": ["-c", command], "site": "local"}}}}


def never_on_a_timer(*_: object) -> None:
    raise AssertionError("the wait read the workflow on a timer")


def test_wait_reads_the_workflow_once_per_event(
        gateway: LiveGateway, store: Any, counting: Counting,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workflow_waits, "poll_until", never_on_a_timer)
    with client_with(gateway, store, counting) as client:
        workflow = client.submit_workflow(one_step(waits("echo done")))
        job_id = (workflow["steps"] or [])[0]["job_id"]
        assert job_id is not None
        seen: list[WorkflowOut] = []
        done: list[WorkflowOut] = []
        # Polling every 10 ms would read it many times while its job is held.
        waiter = threading.Thread(target=lambda: done.append(client.wait_workflow(
            workflow["id"], timeout=300, poll_seconds=0.01, on_update=seen.append)))
        waiter.start()
        with client_with(gateway, store, Counting()) as other:  # not counted
            other.wait(job_id, until=frozenset({"RUNNING"}), timeout=300)
        let_jobs_go(gateway.runtime, job_id)
        waiter.join(timeout=300)
        assert done and done[0]["state"] == "completed", done
    reads = counting.paths.count(f"/api/v1/workflows/{workflow['id']}")
    assert "/api/v1/events" in counting.paths
    assert reads == len(seen)
    assert seen[-1]["state"] == "completed"


def test_wait_follows_a_quiet_workflow_without_polling(
        gateway: LiveGateway, store: Any, counting: Counting,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # During a retry's backoff no job of the workflow is under way, nor after its last
    # job's end until the worker settles it: only the workflow's own events can carry
    # the wait on (an hour between polls, and no poll allowed at all).
    monkeypatch.setattr(workflow_waits, "poll_until", never_on_a_timer)
    spec = {"name": "retried", "steps": {"only": {
        "job": {"executable": "/bin/sh", "args": ["-c", "exit 3"], "site": "local"},
        "retry": {"max": 1, "backoff_seconds": 1, "on": ["nonzero_exit"]}}}}
    with client_with(gateway, store, counting) as client:
        workflow = client.submit_workflow(spec)
        final = client.wait_workflow(workflow["id"], timeout=300, poll_seconds=3600)
    assert final["state"] == "failed", json.dumps(final, default=str)


class NoWorkflowEvents(Counting):
    """A gateway from before the workflow's own events: it refuses them as a filter."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        if WORKFLOW_STATE_TYPE in request.url.params.get_list("type"):
            with self.lock:
                self.paths.append("refused")
            return httpx.Response(422, json={"title": "Invalid request", "status": 422,
                                             "detail": "Unknown event type"},
                                  headers={"Content-Type": "application/problem+json"})
        return super().handle_request(request)


def test_wait_polls_a_quiet_workflow_on_a_gateway_without_its_events(
        gateway: LiveGateway, store: Any) -> None:
    old = NoWorkflowEvents()
    with client_with(gateway, store, old) as client:
        workflow = client.submit_workflow(one_step("echo done"))
        final = client.wait_workflow(workflow["id"], timeout=300, poll_seconds=0.2)
    old.close()
    assert final["state"] == "completed", json.dumps(final, default=str)
    assert old.paths.count("refused") == 1  # asked once, then followed the jobs' stream
    assert "/api/v1/events" in old.paths


def test_wait_polls_a_gateway_without_an_event_stream(
        gateway: LiveGateway, store: Any) -> None:
    old = Counting(hide_events=True)
    with client_with(gateway, store, old) as client:
        workflow = client.submit_workflow(one_step("echo done"))
        final = client.wait_workflow(workflow["id"], timeout=300, poll_seconds=0.2)
    old.close()
    assert final["state"] == "completed", json.dumps(final, default=str)
    assert all(s["job_state"] in FINAL_STATES for s in final["steps"] or [])
    assert old.paths.count("/api/v1/events") == 1  # tried once, then polled
    assert old.paths.count(f"/api/v1/workflows/{workflow['id']}") >= 1
