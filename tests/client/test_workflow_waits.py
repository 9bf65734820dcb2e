"""`GatewayClient.wait_workflow` (what `gridgate workflow submit --wait` uses) on the event
stream of the workflow's jobs: it reads the workflow once per event while a job of it
runs (not on a timer), and polls against a gateway that has no stream. Jobs are held by
a file, never by a time."""

from __future__ import annotations

import json
import threading
from typing import Any

from gateway.client.models import FINAL_STATES
from gateway.client.workflow_waits import quiet
from gateway.schemas.workflows import WorkflowOut
from tests.client.live import LiveGateway
from tests.client.test_job_waits import Counting, client_with, counting, store
from tests.waiting_jobs import let_jobs_go, waits

__all__ = ["counting", "store"]  # fixtures


def one_step(command: str) -> dict[str, Any]:
    return {"name": "held", "steps": {"only": {"job": {
        "executable": "/bin/sh", "args": ["-c", command], "site": "local"}}}}


def test_wait_reads_the_workflow_once_per_event_while_its_job_runs(
        gateway: LiveGateway, store: Any, counting: Counting) -> None:
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
        changes = len(client.events(job_id))
    reads = counting.paths.count(f"/api/v1/workflows/{workflow['id']}")
    assert "/api/v1/events" in counting.paths
    assert reads == len(seen)
    # While its job was under way: once on subscribing, then once per event at most. (Once
    # the job has ended, the worker settles the workflow without an event: read on a timer.)
    under_way = [w for w in seen if not quiet(w)]
    assert 1 <= len(under_way) <= changes + 1, [w["steps"] for w in seen]
    assert seen[-1]["state"] == "completed"


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
