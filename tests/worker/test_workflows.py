"""Workflows driven by a real worker at the local site (issue 16, SQLite and PostgreSQL):
steps run in dependency order with their data edges staged from the producers' outputs;
a failed step skips only its descendants (unless fail_fast); a cancel reaches every
unfinished step; a failure the site caused is retried with a fresh job, the job's own
non-zero exit is not."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import update

from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Job
from gateway.db.workflow_models import WorkflowStep
from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.waiting_jobs import waits

FINISHED = {"completed", "failed", "cancelled"}


def sh(command: str, **more: Any) -> dict[str, Any]:
    return {"executable": "/bin/sh", "args": ["-c", command], "site": "local", **more}


def submit(client: TestClient, headers: dict[str, str], spec: dict[str, Any],
           **more: str) -> dict[str, Any]:
    r = client.post("/api/v1/workflows", json=spec, headers={**headers, **more})
    assert r.status_code == 202, r.text
    found: dict[str, Any] = r.json()
    return found


def show(client: TestClient, headers: dict[str, str], workflow_id: str) -> dict[str, Any]:
    r = client.get(f"/api/v1/workflows/{workflow_id}", headers=headers)
    assert r.status_code == 200, r.text
    found: dict[str, Any] = r.json()
    return found


def run_workflow(worker: Worker, client: TestClient, headers: dict[str, str],
                 workflow_id: str, deadline: float = 90) -> dict[str, Any]:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        worker.run_once()
        found = show(client, headers, workflow_id)
        if found["state"] in FINISHED:
            return found
        time.sleep(0.05)
    raise AssertionError(f"workflow {workflow_id} did not finish: {found}")


def steps(found: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["instance"]: s for s in found["steps"]}


def output(client: TestClient, headers: dict[str, str], job_id: str, path: str) -> str:
    r = client.get(f"/api/v1/jobs/{job_id}/outputs/{path}", headers=headers)
    assert r.status_code == 200, r.text
    return r.text


SWEEP = {
    "name": "mesh-solve-gather",
    "steps": {
        "mesh": {"job": sh("echo grid-v1 > mesh.txt", name="mesh", outputs=["mesh.txt"])},
        "solve": {
            "matrix": {"n": [1, 2, 3]},
            "inputs": [{"from": "mesh:outputs/mesh.txt", "dest": "in/mesh.txt"}],
            "job": sh('echo "$(cat in/mesh.txt) n=$N" > result.txt', name="solve-${{ matrix.n }}",
                      environment={"N": "${{ matrix.n }}"}, outputs=["result.txt"])},
        "gather": {
            "inputs": [{"from": "solve[*]:outputs/result.txt", "dest": "all"}],
            "job": sh("cat all/0/result.txt all/1/result.txt all/2/result.txt > gathered.txt",
                      name="gather", outputs=["gathered.txt"])},
    },
}


def test_a_sweep_runs_in_order_with_its_data_edges(client: TestClient, runtime: Runtime,
                                                    make_user: MakeUser) -> None:
    user = make_user()
    created = submit(client, user.headers, SWEEP)
    first = steps(created)
    assert list(first) == ["mesh", "solve[0]", "solve[1]", "solve[2]", "gather"]
    assert first["mesh"]["state"] == "running" and first["gather"]["state"] == "pending"
    assert first["gather"]["needs"] == ["solve[0]", "solve[1]", "solve[2]"]
    assert first["solve[1]"]["matrix"] == "n=2"
    gated = client.get(f"/api/v1/jobs/{first['gather']['job_id']}", headers=user.headers)
    assert gated.json()["state"] == "ACCEPTED"
    done = run_workflow(Worker(runtime), client, user.headers, created["id"])
    assert done["state"] == "completed", done
    assert done["step_states"] == {"completed": 5}
    final = steps(done)
    gathered = output(client, user.headers, final["gather"]["job_id"], "gathered.txt")
    assert gathered == "grid-v1 n=1\ngrid-v1 n=2\ngrid-v1 n=3\n"
    jobs = {i: client.get(f"/api/v1/jobs/{s['job_id']}", headers=user.headers).json()
            for i, s in final.items()}
    # Each consumer was sent to its site only after its producers had ended.
    for consumer in ("solve[0]", "gather"):
        for producer in final[consumer]["needs"]:
            assert (jobs[consumer]["attempts"][0]["submitted_at"]
                    >= jobs[producer]["ended_at"]), (consumer, producer)
    # The data edge is an ordinary input of the consumer's job, staged with its checksum.
    assert jobs["solve[0]"]["spec"]["inputs"][0]["dest"] == "in/mesh.txt"
    assert jobs["solve[0]"]["spec"]["inputs"][0]["source"].startswith("upload:")
    events = client.get(f"/api/v1/workflows/{created['id']}/events",
                        headers=user.headers).json()["items"]
    assert events[0]["message"].startswith("created with 5 step instance(s), 1 starting now")
    assert events[-1]["state"] == "completed"


def test_a_failed_step_skips_only_its_descendants(client: TestClient, runtime: Runtime,
                                                  make_user: MakeUser) -> None:
    user = make_user()
    spec = {"name": "partial", "steps": {
        "a": {"job": sh("exit 3")},
        "b": {"needs": ["a"], "job": sh("true")},
        "c": {"needs": ["b"], "job": sh("true")},
        "other": {"job": sh("sleep 1")},
        "after_other": {"needs": ["other"], "job": sh("true")},
    }}
    created = submit(client, user.headers, spec)
    done = run_workflow(Worker(runtime), client, user.headers, created["id"])
    final = steps(done)
    assert done["state"] == "failed"
    assert {i: s["state"] for i, s in final.items()} == {
        "a": "failed", "b": "skipped", "c": "skipped", "other": "completed",
        "after_other": "completed"}
    # The job's own non-zero exit is not retried by default.
    assert final["a"]["retries"] == 0
    assert "nonzero_exit is not retried" in final["a"]["reason"]
    c_job = client.get(f"/api/v1/jobs/{final['c']['job_id']}", headers=user.headers).json()
    assert c_job["state"] == "CANCELLED" and c_job["attempts"] == []
    assert c_job["reason"] == ("DependencyNeverSatisfied: needs b, which was skipped because "
                               "a failed")


def test_fail_fast_stops_everything(client: TestClient, runtime: Runtime,
                                    make_user: MakeUser) -> None:
    user = make_user()
    spec = {"name": "ff", "fail_fast": True, "steps": {
        "bad": {"job": sh("exit 1")},
        "slow": {"job": sh(waits())},  # never let go: only the cancel ends it
        "later": {"needs": ["slow"], "job": sh("true")},
    }}
    created = submit(client, user.headers, spec)
    done = run_workflow(Worker(runtime), client, user.headers, created["id"])
    assert done["state"] == "failed"
    assert {i: s["state"] for i, s in steps(done).items()} == {
        "bad": "failed", "slow": "cancelled", "later": "skipped"}


def test_cancel_reaches_every_unfinished_step(client: TestClient, runtime: Runtime,
                                              make_user: MakeUser) -> None:
    user = make_user()
    spec = {"name": "to-cancel", "steps": {
        "long": {"job": sh(waits())},  # never let go: only the cancel ends it
        "next": {"needs": ["long"], "job": sh("true")},
    }}
    created = submit(client, user.headers, spec)
    worker = Worker(runtime)
    long_job = steps(created)["long"]["job_id"]
    end = time.monotonic() + 90
    while client.get(f"/api/v1/jobs/{long_job}",
                     headers=user.headers).json()["state"] != "RUNNING":
        assert time.monotonic() < end
        worker.run_once()
        time.sleep(0.05)
    r = client.post(f"/api/v1/workflows/{created['id']}/cancel", headers=user.headers)
    assert r.status_code == 202, r.text
    assert r.json()["cancel_requested"] is True
    assert steps(r.json())["next"]["state"] == "cancelled"
    done = run_workflow(worker, client, user.headers, created["id"])
    assert done["state"] == "cancelled"
    assert {i: s["job_state"] for i, s in steps(done).items()} == {
        "long": "CANCELLED", "next": "CANCELLED"}
    again = client.post(f"/api/v1/workflows/{created['id']}/cancel", headers=user.headers)
    assert again.status_code == 409
    assert again.json()["type"] == "/problems/conflict"
    document = client.get("/openapi.json").json()
    assert "409" in document["paths"]["/api/v1/workflows/{workflow_id}/cancel"]["post"][
        "responses"]


def _fail_like_the_site(runtime: Runtime, job_id: str, reason: str) -> None:
    """The job ended FAILED for `reason`, as the poll step records a site's verdict."""
    with transaction(runtime.sessions) as session:
        session.execute(update(Job).where(Job.id == job_id).values(
            state="FAILED", reason=reason, ended_at=utcnow(), gate=None))


def test_a_node_failure_is_retried_with_a_fresh_job(client: TestClient, runtime: Runtime,
                                                    make_user: MakeUser) -> None:
    user = make_user()
    spec = {"name": "retry", "steps": {
        "a": {"job": sh("true", outputs=[]), "retry": {"max": 1, "backoff_seconds": 0}},
        "b": {"needs": ["a"], "job": sh("true")},
    }}
    created = submit(client, user.headers, spec)
    first = steps(created)["a"]["job_id"]
    _fail_like_the_site(runtime, first, "NODE_FAIL")
    worker = Worker(runtime)
    worker.run_once()
    retried = steps(show(client, user.headers, created["id"]))["a"]
    assert retried["retries"] == 1 and retried["job_id"] != first
    assert retried["state"] == "running"
    # The dependent now waits for the new job.
    b_job = client.get(f"/api/v1/jobs/{steps(created)['b']['job_id']}",
                       headers=user.headers).json()
    assert b_job["spec"].get("depends_on") in (None, [])
    # A second node failure uses up retry.max.
    _fail_like_the_site(runtime, retried["job_id"], "NODE_FAIL")
    done = run_workflow(worker, client, user.headers, created["id"], deadline=30)
    final = steps(done)
    assert (done["state"], final["a"]["state"], final["b"]["state"]) == (
        "failed", "failed", "skipped")
    assert "retries of retry.max are used up" in final["a"]["reason"]


def test_a_retry_waits_for_its_backoff(client: TestClient, runtime: Runtime,
                                       make_user: MakeUser) -> None:
    user = make_user()
    spec = {"name": "backoff", "steps": {
        "a": {"job": sh("true"), "retry": {"backoff_seconds": 600}}}}
    created = submit(client, user.headers, spec)
    first = steps(created)["a"]["job_id"]
    _fail_like_the_site(runtime, first, "PREEMPTED")
    worker = Worker(runtime)
    worker.run_once()
    waiting = steps(show(client, user.headers, created["id"]))["a"]
    assert (waiting["job_id"], waiting["state"]) == (first, "running")
    assert "retry 1 of 2 in 600 s" in waiting["reason"]
    with transaction(runtime.sessions) as session:  # the backoff has passed
        session.execute(update(WorkflowStep).values(retry_at=utcnow() - timedelta(seconds=1)))
    done = run_workflow(worker, client, user.headers, created["id"], deadline=30)
    final = steps(done)["a"]
    assert (done["state"], final["retries"]) == ("completed", 1)
    assert final["job_id"] != first


def test_an_output_kept_at_its_site_is_copied_from_there(client: TestClient, runtime: Runtime,
                                                         make_user: MakeUser) -> None:
    user = make_user()
    spec = {"name": "kept", "steps": {
        "make": {"job": sh("mkdir -p d && echo one > d/a.txt && echo two > d/b.txt",
                           outputs=["d/*.txt"], outputs_mode="keep")},
        "use": {"inputs": [{"from": "make:outputs/d/*.txt", "dest": "got"}],
                "job": sh("cat got/d/a.txt got/d/b.txt > both.txt", outputs=["both.txt"])},
    }}
    created = submit(client, user.headers, spec)
    done = run_workflow(Worker(runtime), client, user.headers, created["id"])
    assert done["state"] == "completed", steps(done)
    use = steps(done)["use"]["job_id"]
    assert output(client, user.headers, use, "both.txt") == "one\ntwo\n"
    inputs = client.get(f"/api/v1/jobs/{use}", headers=user.headers).json()["spec"]["inputs"]
    assert [i["dest"] for i in inputs] == ["got/d/a.txt", "got/d/b.txt"]
    assert all(i["source"].startswith("site://local/") for i in inputs)


def test_a_producer_without_the_named_output_fails_its_consumer(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    spec = {"name": "missing", "steps": {
        "make": {"job": sh("true", outputs=["r.txt"])},  # declares r.txt, never writes it
        "use": {"inputs": [{"from": "make:outputs/r.txt", "dest": "r.txt"}],
                "job": sh("cat r.txt")},
        "after": {"needs": ["use"], "job": sh("true")},
    }}
    created = submit(client, user.headers, spec)
    done = run_workflow(Worker(runtime), client, user.headers, created["id"])
    final = steps(done)
    assert (done["state"], final["make"]["state"], final["use"]["state"],
            final["after"]["state"]) == ("failed", "completed", "failed", "skipped")
    assert "make completed without an output 'r.txt'" in final["use"]["reason"]
