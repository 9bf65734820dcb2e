"""One researcher refused a certificate (disabled, on a certificate site) holds up that
researcher's jobs only, never the site: the others' jobs are followed to their end, the
site stays up, and the refused researcher's jobs go on once they are enabled again
(issue 33; the fairness of issue 1). Here on the local site, its entry
given a second account whose adapter is refused as a certificate site's would be."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select

from adapters.base import Adapter
from adapters.errors import CredentialsRefused
from gateway.db.models import Site
from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.waiting_jobs import WAIT, let_jobs_go


class Refused:
    """The local adapter, as seen by a user whose certificate is refused."""

    def __init__(self, inner: Adapter) -> None:
        self.inner = inner
        self.refuse = False

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if self.refuse and name in ("status", "usage", "cancel", "submit"):
            def refused(*_: object, **__: object) -> None:
                raise CredentialsRefused("no certificate for gateway user 'bob': disabled")
            return refused
        return attribute


def _until(worker: Worker, runtime: Runtime, client: TestClient, headers: dict[str, str],
           job_id: str, state: str) -> None:
    # A deadline, not a number of cycles: a submission refused while bob was disabled
    # keeps its lease (settings.submit_lease_seconds) and is taken up again after it.
    end = time.monotonic() + 120
    while time.monotonic() < end:
        worker.run_once()
        if client.get(f"/api/v1/jobs/{job_id}", headers=headers).json()["state"] == state:
            return
        time.sleep(0.1)
    raise AssertionError(f"{job_id} never {state}")


def test_a_refused_researcher_holds_up_no_one_else(runtime: Runtime, client: TestClient,
                                                   make_user: MakeUser) -> None:
    alice, bob = make_user("alice"), make_user("bob")
    local = runtime.sites.get("local")
    refused = Refused(local.adapter)
    entry = dataclasses.replace(local, mapped={"alice": local.adapter, "bob": refused})
    runtime.sites._entries["local"] = entry  # the test's own site entry
    spec = {"name": "held", "executable": "/bin/sh", "args": ["-c", WAIT]}
    jobs = {}
    for user in (alice, bob):
        r = client.post("/api/v1/jobs", headers=user.headers, json=spec)
        assert r.status_code == 202, r.text
        jobs[user] = r.json()["id"]
    worker = Worker(runtime)
    for user in (alice, bob):
        _until(worker, runtime, client, user.headers, jobs[user], "RUNNING")
    refused.refuse = True
    # Refused while bob submits another job, too: it waits, and the site stays up.
    r = client.post("/api/v1/jobs", headers=bob.headers,
                    json={"name": "later", "executable": "/bin/true"})
    assert r.status_code == 202, r.text
    later = r.json()["id"]
    let_jobs_go(runtime, jobs[alice], jobs[bob])
    _until(worker, runtime, client, alice.headers, jobs[alice], "COMPLETED")
    assert client.get(f"/api/v1/jobs/{jobs[bob]}", headers=bob.headers).json()["state"] == (
        "RUNNING")  # not followed while refused
    with runtime.sessions() as session:
        assert session.scalar(select(Site.state).where(Site.name == "local")) != "down"
    refused.refuse = False  # enabled again: followed to its end
    _until(worker, runtime, client, bob.headers, jobs[bob], "COMPLETED")
    _until(worker, runtime, client, bob.headers, later, "COMPLETED")
