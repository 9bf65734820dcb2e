"""Job dependencies driven by a real worker at the local site (issue 16, SQLite and
PostgreSQL): a job waits ACCEPTED with Slurm's reason `Dependency` until the jobs it
depends on have ended as it needs, then runs; one whose dependency can never be satisfied
stays ACCEPTED with the reason `DependencyNeverSatisfied` and cancels cleanly."""

from __future__ import annotations

import itertools
from typing import Any

from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.waiting_jobs import let_jobs_go, waits
from tests.worker.test_worker_local import post, run_until

FINAL = {"COMPLETED", "FAILED", "CANCELLED"}


def sh(name: str, command: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "executable": "/bin/sh", "args": ["-c", command], **more}


def after(when: str, *job_ids: str) -> list[dict[str, str]]:
    return [{"job": job_id, "when": when} for job_id in job_ids]


def show(client: TestClient, headers: dict[str, str], job_id: str) -> dict[str, Any]:
    job: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}", headers=headers).json()
    return job


def test_an_afterok_chain_runs_in_order(client: TestClient, runtime: Runtime,
                                        make_user: MakeUser) -> None:
    user = make_user()
    worker = Worker(runtime)
    # The first runs until the test has seen the others wait for it.
    first = post(client, user.headers, sh("first", waits("echo one")))
    second = post(client, user.headers, sh("second", "echo two",
                                           depends_on=after("afterok", first)))
    third = post(client, user.headers, sh("third", "echo three", site="local",
                                          depends_on=after("afterok", second)))
    waiting = show(client, user.headers, second)
    assert waiting["state"] == "ACCEPTED"
    assert waiting["reason"] == f"Dependency: waiting for job {first} (afterok)"
    running = run_until(worker, client, user.headers, first, {"RUNNING"})
    assert running["state"] == "RUNNING"
    for job_id in (second, third):
        job = show(client, user.headers, job_id)
        assert (job["state"], job["attempts"]) == ("ACCEPTED", []), job
        assert job["reason"].startswith("Dependency: waiting for job ")
    assert let_jobs_go(runtime, first)
    done = run_until(worker, client, user.headers, third, FINAL)
    jobs = [show(client, user.headers, job_id) for job_id in (first, second, third)]
    assert [j["state"] for j in jobs] == ["COMPLETED"] * 3, done
    # Each was sent to its site only after the one it waits for had ended.
    for before, later in itertools.pairwise(jobs):
        assert later["attempts"][0]["submitted_at"] > before["ended_at"]
    events = client.get(f"/api/v1/jobs/{third}/events", headers=user.headers).json()["items"]
    assert any(e["reason"] == f"dependencies satisfied (afterok:{second})" for e in events)


def test_afternotok_runs_only_after_a_failure(client: TestClient, runtime: Runtime,
                                              make_user: MakeUser) -> None:
    user = make_user()
    worker = Worker(runtime)
    fails = post(client, user.headers, sh("fails", "exit 3"))
    works = post(client, user.headers, sh("works", "true"))
    rescue = post(client, user.headers, sh("rescue", "echo rescued",
                                           depends_on=after("afternotok", fails)))
    idle = post(client, user.headers, sh("idle", "true",
                                         depends_on=after("afternotok", works)))
    anyway = post(client, user.headers, sh("anyway", "true",
                                           depends_on=after("afterany", fails, works)))
    for job_id in (rescue, anyway):
        assert run_until(worker, client, user.headers, job_id, FINAL)["state"] == "COMPLETED"
    assert show(client, user.headers, fails)["state"] == "FAILED"
    out = client.get(f"/api/v1/jobs/{rescue}/logs/stdout", headers=user.headers)
    assert out.text == "rescued\n"
    never = show(client, user.headers, idle)
    assert (never["state"], never["attempts"]) == ("ACCEPTED", [])
    assert never["reason"] == (f"DependencyNeverSatisfied: job {works} completed, so "
                               f"afternotok:{works} can never be satisfied")


def test_a_dependency_never_satisfied_waits_and_cancels_cleanly(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    worker = Worker(runtime)
    fails = post(client, user.headers, sh("fails", "exit 1", site="local"))
    stuck = post(client, user.headers, sh("stuck", "true", site="local",
                                          depends_on=after("afterok", fails)))
    run_until(worker, client, user.headers, fails, FINAL)
    for _ in range(3):
        worker.run_once()
    job = show(client, user.headers, stuck)
    assert (job["state"], job["attempts"]) == ("ACCEPTED", [])
    assert job["reason"] == (f"DependencyNeverSatisfied: job {fails} failed, so "
                             f"afterok:{fails} can never be satisfied")
    events = client.get(f"/api/v1/jobs/{stuck}/events", headers=user.headers).json()["items"]
    assert sum(e["reason"].startswith("DependencyNeverSatisfied") for e in events) == 1
    # A job submitted now, depending on the failed one, is told at once.
    late = client.post("/api/v1/jobs", headers=user.headers,
                       json=sh("late", "true", depends_on=after("afterok", fails))).json()
    assert (late["state"], late["reason"]) == ("ACCEPTED", job["reason"])
    cancelled = client.post(f"/api/v1/jobs/{stuck}/cancel", headers=user.headers)
    assert cancelled.status_code == 202
    assert (cancelled.json()["state"], cancelled.json()["reason"]) == (
        "CANCELLED", "cancelled by user")
    worker.run_once()
    assert show(client, user.headers, stuck)["attempts"] == []


def test_a_held_dependent_waits_for_its_release_too(client: TestClient, runtime: Runtime,
                                                    make_user: MakeUser) -> None:
    user = make_user()
    worker = Worker(runtime)
    first = post(client, user.headers, sh("first", "sleep 1"))
    second = post(client, user.headers, sh("second", "true",
                                           depends_on=after("afterok", first)))
    for verb in ("hold", "release", "hold"):
        r = client.post(f"/api/v1/jobs/{second}/{verb}", headers=user.headers)
        assert r.status_code == 200, r.text
    assert r.json()["reason"].startswith("held by ")
    released_early = [e["reason"] for e in client.get(
        f"/api/v1/jobs/{second}/events", headers=user.headers).json()["items"]
        if e["reason"].startswith("released by ")]
    assert released_early[0].endswith("; it still waits for its dependencies")
    run_until(worker, client, user.headers, first, FINAL)
    for _ in range(3):
        worker.run_once()
    held = show(client, user.headers, second)
    assert (held["state"], held["held"], held["attempts"]) == ("ACCEPTED", True, [])
    assert held["reason"].startswith("held by ")  # satisfied meanwhile, still held
    released = client.post(f"/api/v1/jobs/{second}/release", headers=user.headers).json()
    assert not released["reason"].endswith("still waits for its dependencies")
    assert run_until(worker, client, user.headers, second, FINAL)["state"] == "COMPLETED"
