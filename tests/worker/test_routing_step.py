"""The worker's routing step: a `site: auto` job still waiting at a site an administrator
drained is placed again, by the same routing function the API admitted it with, and
runs at the site it moved to; a job whose user named the site keeps waiting there, and
so does a job no other site takes."""

from __future__ import annotations

import dataclasses

from fastapi.testclient import TestClient
from sqlalchemy import update

from gateway.db.engine import transaction
from gateway.db.models import Site
from gateway.runtime import Runtime
from gateway.services.sites import SiteRegistry
from gateway.worker.context import StepContext
from gateway.worker.loop import Worker
from gateway.worker.route import route_waiting
from tests.conftest import MakeUser
from tests.worker.test_worker_local import post, run_until

SPEC = {"name": "r", "executable": "/bin/true"}


def drain(runtime: Runtime, name: str) -> None:
    with transaction(runtime.sessions) as session:
        session.execute(update(Site).where(Site.name == name).values(drained=True))


def show(client: TestClient, headers: dict[str, str], job_id: str) -> dict[str, object]:
    job: dict[str, object] = client.get(f"/api/v1/jobs/{job_id}", headers=headers).json()
    return job


def test_auto_jobs_leave_a_drained_site(client: TestClient, runtime: Runtime,
                                        make_user: MakeUser) -> None:
    user = make_user()
    auto = post(client, user.headers, SPEC)
    pinned = post(client, user.headers, {**SPEC, "site": "local"})
    # A second site: the local one again under another name, known to this worker only.
    local = runtime.sites.get("local")
    registry = SiteRegistry([local, dataclasses.replace(local, name="twin")])
    registry.sync(runtime.sessions)
    twin_runtime = dataclasses.replace(runtime, sites=registry)

    assert route_waiting(StepContext.of(twin_runtime, "w")) is False  # every site open
    drain(runtime, "local")
    # The API's worker knows no other site: both jobs keep waiting where they are.
    assert route_waiting(StepContext.of(runtime, "w")) is False
    assert show(client, user.headers, auto)["site"] == "local"

    assert route_waiting(StepContext.of(twin_runtime, "w")) is True
    moved = show(client, user.headers, auto)
    assert (moved["site"], moved["state"]) == ("twin", "ACCEPTED")
    assert moved["state_reason"] == ("site 'local' stopped accepting jobs; placed at site "
                                     "'twin'")
    assert show(client, user.headers, pinned)["site"] == "local"
    assert route_waiting(StepContext.of(twin_runtime, "w")) is False  # nothing left to move

    job = run_until(Worker(twin_runtime), client, user.headers, auto, {"COMPLETED", "FAILED"})
    assert job["state"] == "COMPLETED" and job["attempts"][0]["site"] == "twin"
    waiting = show(client, user.headers, pinned)
    assert (waiting["site"], waiting["state"]) == ("local", "ACCEPTED")
