"""Hold and release (POST /jobs/{id}/hold|release) and short ids (GET /jobs?id_prefix=),
issue 14, on SQLite and PostgreSQL. A held job is neither routed nor submitted by a real
worker until it is released; a job a worker has taken cannot be held (409); other users'
jobs are 404, as for cancel."""

from __future__ import annotations

from typing import Any

from alembic import command
from fastapi.testclient import TestClient

from gateway.db.engine import is_postgres
from gateway.db.migrate import alembic_config, upgrade_database
from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.waiting_jobs import waits
from tests.worker.test_worker_local import post, run_until

TRUE = {"name": "held", "executable": "/bin/true"}


def show(client: TestClient, headers: dict[str, str], job_id: str) -> dict[str, Any]:
    job: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}", headers=headers).json()
    return job


def test_a_held_job_is_not_routed_or_submitted_until_released(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    worker = Worker(runtime)
    for spec in ({**TRUE, "site": "auto"}, {**TRUE, "site": "local"}):
        job_id = post(client, user.headers, spec)
        held = client.post(f"/api/v1/jobs/{job_id}/hold", headers=user.headers)
        assert held.status_code == 200, held.text
        assert held.json()["held"] is True and held.json()["state"] == "ACCEPTED"
        assert held.json()["reason"].startswith("held by ")
        for _ in range(3):
            worker.run_once()
        job = show(client, user.headers, job_id)
        assert (job["state"], job["attempts"], job["held"]) == ("ACCEPTED", [], True)
        # An auto job stays unplaced: no routing pass looked at it.
        assert job["site"] == (None if spec["site"] == "auto" else "local")
        again = client.post(f"/api/v1/jobs/{job_id}/hold", headers=user.headers)
        assert again.status_code == 200 and again.json()["held"] is True
        released = client.post(f"/api/v1/jobs/{job_id}/release", headers=user.headers)
        assert released.status_code == 200 and released.json()["held"] is False
        done = run_until(worker, client, user.headers, job_id, {"COMPLETED", "FAILED"})
        assert done["state"] == "COMPLETED", done
        events = client.get(f"/api/v1/jobs/{job_id}/events", headers=user.headers).json()
        reasons = [e["reason"] or "" for e in events["items"]]
        assert any(r.startswith("held by ") for r in reasons)
        assert any(r.startswith("released by ") for r in reasons)


def test_a_job_a_worker_took_cannot_be_held(client: TestClient, runtime: Runtime,
                                            make_user: MakeUser) -> None:
    user = make_user()
    job_id = post(client, user.headers, {"name": "taken", "executable": "/bin/sh",
                                         "args": ["-c", waits()], "site": "local"})
    worker = Worker(runtime)
    run_until(worker, client, user.headers, job_id, {"QUEUED", "RUNNING"})
    r = client.post(f"/api/v1/jobs/{job_id}/hold", headers=user.headers)
    assert r.status_code == 409, r.text
    detail = r.json()["detail"]
    assert "already taken it to site 'local'" in detail and "gridgate cancel" in detail
    client.post(f"/api/v1/jobs/{job_id}/cancel", headers=user.headers)
    run_until(worker, client, user.headers, job_id, {"CANCELLED"})
    ended = client.post(f"/api/v1/jobs/{job_id}/hold", headers=user.headers)
    assert ended.status_code == 409 and "already CANCELLED" in ended.json()["detail"]
    assert client.post(f"/api/v1/jobs/{job_id}/release",
                       headers=user.headers).status_code == 409


def test_cancelling_a_held_job_clears_the_hold(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    job_id = post(client, user.headers, TRUE)
    client.post(f"/api/v1/jobs/{job_id}/hold", headers=user.headers)
    cancelled = client.post(f"/api/v1/jobs/{job_id}/cancel", headers=user.headers).json()
    assert (cancelled["state"], cancelled["held"]) == ("CANCELLED", False)


def test_hold_and_release_follow_the_cancel_rules_for_other_users(
        client: TestClient, make_user: MakeUser) -> None:
    alice, bob = make_user(), make_user()
    auditor = make_user(roles=("auditor",))
    job_id = post(client, alice.headers, TRUE)
    for verb in ("hold", "release"):
        r = client.post(f"/api/v1/jobs/{job_id}/{verb}", headers=bob.headers)
        assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"
        assert client.post(f"/api/v1/jobs/{job_id}/{verb}",
                           headers=auditor.headers).status_code == 403
    assert show(client, alice.headers, job_id)["held"] is False


def test_id_prefix_finds_only_the_callers_jobs(client: TestClient, make_user: MakeUser) -> None:
    alice, bob = make_user(), make_user()
    mine = [post(client, alice.headers, TRUE) for _ in range(3)]
    theirs = post(client, bob.headers, TRUE)

    def listed(user_headers: dict[str, str], prefix: str) -> list[str]:
        r = client.get("/api/v1/jobs", params={"id_prefix": prefix}, headers=user_headers)
        assert r.status_code == 200, r.text
        return [j["id"] for j in r.json()["items"]]

    assert listed(alice.headers, mine[0][:8]) == [mine[0]]
    assert listed(alice.headers, mine[1]) == [mine[1]]
    assert listed(alice.headers, theirs[:8]) == []  # never another user's job
    assert listed(bob.headers, theirs[:12]) == [theirs]
    auditor = make_user(roles=("auditor",))  # reads every job, but `mine` is only theirs
    assert listed(auditor.headers, theirs[:8]) == [theirs]
    mine_only = client.get("/api/v1/jobs", params={"id_prefix": theirs[:8], "mine": True},
                           headers=auditor.headers)
    assert mine_only.json()["items"] == []
    # Every hex digit starts some of a few ids; one character is usually ambiguous.
    first = mine[0][0]
    assert set(listed(alice.headers, first)) == {j for j in mine if j.startswith(first)}
    for bad in ("", "D3ECA39F", "d3%", "d3_", "x", "d3\n", "0" * 37):
        r = client.get("/api/v1/jobs", params={"id_prefix": bad}, headers=alice.headers)
        assert r.status_code == 422, (bad, r.text)
        assert r.headers["content-type"] == "application/problem+json"


def test_name_filter_is_exact(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    a = post(client, user.headers, {**TRUE, "name": "sweep"})
    post(client, user.headers, {**TRUE, "name": "sweep-2"})
    r = client.get("/api/v1/jobs", params={"name": "sweep"}, headers=user.headers)
    assert [j["id"] for j in r.json()["items"]] == [a]


def test_migration_0011_keeps_existing_jobs(client: TestClient, runtime: Runtime,
                                            make_user: MakeUser) -> None:
    """Down to 0010 and up again with jobs, events and labels in the database: on SQLite a
    table rebuild would break the foreign keys that point at jobs."""
    user = make_user()
    job_id = post(client, user.headers, {**TRUE, "labels": {"k": "v"}})
    cfg = alembic_config(runtime.engine)
    if is_postgres(runtime.engine):
        with runtime.engine.connect() as conn:
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "0010")
            conn.commit()
    else:
        command.downgrade(alembic_config(runtime.engine), "0010")
    upgrade_database(runtime.engine)
    job = show(client, user.headers, job_id)
    assert (job["state"], job["held"], job["labels"]) == ("ACCEPTED", False, {"k": "v"})
