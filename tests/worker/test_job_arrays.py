"""Job arrays driven by a real worker at the local site (issue 16, SQLite and PostgreSQL):
each task runs once with its index in GRIDGATE_ARRAY_TASK_ID, the throttle holds at every
cycle, a cancel of the array ends every unfinished task, a job depending on the array
waits for all its tasks, and a worker restart in the middle finishes the array."""

from __future__ import annotations

import time
from typing import Any

from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.worker.gates import open_gates
from gateway.worker.loop import Worker
from gateway.worker.route import route_jobs
from gateway.worker.submission.claim import claim_accepted
from tests.conftest import MakeUser
from tests.waiting_jobs import let_all_go, waits
from tests.worker.test_dependencies import FINAL, after, sh, show

# Each task keeps running until the test lets it go (tests/waiting_jobs.py).
PRINT_INDEX = waits("echo $GRIDGATE_ARRAY_TASK_ID $GRIDGATE_ARRAY_TASK_COUNT "
                    "$GRIDGATE_ARRAY_TASK_MIN $GRIDGATE_ARRAY_TASK_MAX")


def submit_array(client: TestClient, headers: dict[str, str], spec: dict[str, Any]
                 ) -> tuple[str, dict[str, Any]]:
    r = client.post("/api/v1/jobs", json=spec, headers=headers)
    assert r.status_code == 202, r.text
    first: dict[str, Any] = r.json()
    return first["array_job_id"], first


def tasks(client: TestClient, headers: dict[str, str], array_id: str) -> list[dict[str, Any]]:
    r = client.get("/api/v1/jobs", params={"array_job_id": array_id, "limit": 500},
                   headers=headers)
    assert r.status_code == 200, r.text
    return sorted(r.json()["items"], key=lambda job: job["array_index"])


def past_accepted(jobs: list[dict[str, Any]]) -> int:
    return sum(job["state"] not in FINAL | {"ACCEPTED"} for job in jobs)


def cycle_until_done(worker: Worker, client: TestClient, headers: dict[str, str],
                     array_id: str, throttle: int, deadline: float = 90,
                     reached: bool = True) -> list[dict[str, Any]]:
    """Worker cycles until every task has ended, the throttle checked after each (and,
    when `reached`, seen reached: waiting tasks are let go only once it has been)."""
    end = time.monotonic() + deadline
    seen = 0
    while time.monotonic() < end:
        worker.run_once()
        found = tasks(client, headers, array_id)
        running = past_accepted(found)
        assert running <= throttle, [(j["array_index"], j["state"]) for j in found]
        seen = max(seen, running)
        if seen == throttle or not reached:
            let_all_go(worker.rt.settings.jobs_dir)
        if all(job["state"] in FINAL for job in found):
            assert seen == throttle or not reached  # reached, not just respected
            return found
        time.sleep(0.05)
    raise AssertionError(f"array {array_id} did not finish: {found}")


def test_an_array_runs_each_task_once_within_its_throttle(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    array_id, first = submit_array(client, user.headers,
                                   sh("sweep", PRINT_INDEX, array="10-15%2"))
    assert (first["array_index"], first["state"], first["reason"]) == (10, "ACCEPTED", None)
    waiting = tasks(client, user.headers, array_id)
    assert [j["array_index"] for j in waiting] == list(range(10, 16))
    assert [j["reason"] for j in waiting[2:]] == [
        "JobArrayTaskLimit: at most 2 task(s) of the array run at once"] * 4
    done = cycle_until_done(Worker(runtime), client, user.headers, array_id, throttle=2)
    for job in done:
        assert job["state"] == "COMPLETED" and len(job["attempts"]) == 1, job
        out = client.get(f"/api/v1/jobs/{job['id']}/logs/stdout", headers=user.headers)
        assert out.text == f"{job['array_index']} 6 10 15\n"
    array = client.get(f"/api/v1/job-arrays/{array_id}", headers=user.headers).json()
    assert (array["array"], array["task_count"], array["throttle"], array["task_states"]) == (
        "10-15%2", 6, 2, {"COMPLETED": 6})


def test_cancelling_an_array_cancels_every_unfinished_task(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    worker = Worker(runtime)
    array_id, _ = submit_array(client, user.headers,  # never let go: the cancel ends them
                               sh("long", waits(), array="0-5%2", site="local"))
    end = time.monotonic() + 90
    while not (past_accepted(tasks(client, user.headers, array_id)) == 2 and any(
            j["state"] == "RUNNING" for j in tasks(client, user.headers, array_id))):
        assert time.monotonic() < end, tasks(client, user.headers, array_id)
        worker.run_once()
        time.sleep(0.1)
    r = client.post(f"/api/v1/job-arrays/{array_id}/cancel", headers=user.headers)
    assert r.status_code == 202, r.text
    assert r.json()["task_states"].get("CANCELLED", 0) >= 4
    end = time.monotonic() + 60
    while not all(j["state"] in FINAL for j in tasks(client, user.headers, array_id)):
        assert time.monotonic() < end
        worker.run_once()
        time.sleep(0.1)
    found = tasks(client, user.headers, array_id)
    assert {j["state"] for j in found} == {"CANCELLED"}
    assert sum(bool(j["attempts"]) for j in found) == 2  # the waiting ones never ran
    again = client.post(f"/api/v1/job-arrays/{array_id}/cancel", headers=user.headers)
    assert again.status_code == 409 and "nothing to cancel" in again.json()["detail"]


def test_a_dependency_on_an_array_waits_for_all_its_tasks(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    worker = Worker(runtime)
    array_id, _ = submit_array(client, user.headers, sh("part", "exit $GRIDGATE_ARRAY_TASK_ID",
                                                        array="0-2"))
    ok = client.post("/api/v1/jobs", headers=user.headers,
                     json=sh("ok", "true", depends_on=after("afterok", array_id))).json()
    notok = client.post("/api/v1/jobs", headers=user.headers,
                        json=sh("notok", "echo fixing",
                                depends_on=after("afternotok", array_id))).json()
    assert ok["reason"] == f"Dependency: waiting for job {array_id} (afterok)"
    done = cycle_until_done(worker, client, user.headers, array_id, throttle=3,
                            reached=False)
    assert [j["state"] for j in done] == ["COMPLETED", "FAILED", "FAILED"]
    end = time.monotonic() + 60
    while show(client, user.headers, notok["id"])["state"] not in FINAL:
        assert time.monotonic() < end
        worker.run_once()
        time.sleep(0.1)
    assert show(client, user.headers, notok["id"])["state"] == "COMPLETED"
    never = show(client, user.headers, ok["id"])
    assert never["reason"].startswith(f"DependencyNeverSatisfied: job {array_id} failed")


def test_a_worker_restart_mid_array_finishes_it_running_each_task_once(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    array_id, _ = submit_array(client, user.headers, sh("sweep", PRINT_INDEX, array="0-5%2"))
    old = Worker(runtime)
    end = time.monotonic() + 90
    while sum(j["state"] == "COMPLETED" for j in tasks(client, user.headers, array_id)) < 2:
        assert time.monotonic() < end, tasks(client, user.headers, array_id)
        old.run_once()
        let_all_go(runtime.settings.jobs_dir)
        time.sleep(0.05)
    # The old worker dies in a cycle: after letting tasks through the gates, routing and
    # claiming them (SUBMITTING, under its lease), before submitting them. The new worker
    # takes them over once the lease runs out.
    open_gates(old.ctx)
    route_jobs(old.ctx)
    claimed = claim_accepted(old.ctx, runtime.sites.get("local"))
    assert claimed and all(c.array_index is not None for c in claimed)
    done = cycle_until_done(Worker(runtime), client, user.headers, array_id, throttle=2)
    for job in done:
        assert job["state"] == "COMPLETED" and len(job["attempts"]) == 1, job
        out = client.get(f"/api/v1/jobs/{job['id']}/logs/stdout", headers=user.headers)
        assert out.text == f"{job['array_index']} 6 0 5\n"
