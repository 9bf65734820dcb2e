"""A site where each researcher is their own account is asked about each account's jobs
with a call of that account, several accounts at once (gateway.worker.poll): here two
accounts' status calls must be under way together to pass a barrier, so a poll that asked
them one after the other fails (the barrier breaks), with no timing involved. A site with
a status account asks it alone, once, about every account's jobs."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

from fastapi.testclient import TestClient

from adapters.base import Adapter
from gateway.runtime import Runtime
from gateway.worker.loop import Worker
from gateway.worker.poll import poll
from tests.conftest import MakeUser, TestUser
from tests.waiting_jobs import WAIT, let_jobs_go


class Together:
    """The local adapter, whose status calls wait at `barrier` for the other account's."""

    def __init__(self, inner: Adapter, barrier: threading.Barrier) -> None:
        self.inner = inner
        self.barrier = barrier
        self.waiting = False

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if name == "status" and self.waiting:
            def together(*args: Any, **kwargs: Any) -> Any:
                self.barrier.wait()
                return attribute(*args, **kwargs)
            return together
        return attribute


def _running(runtime: Runtime, client: TestClient, users: tuple[TestUser, ...]
             ) -> tuple[Worker, list[str]]:
    """A held job of each user's, and a worker cycled until they all run (a deadline,
    not a count of cycles); the worker and the jobs' ids."""
    ids = []
    for user in users:
        r = client.post("/api/v1/jobs", headers=user.headers,
                        json={"name": "held", "executable": "/bin/sh", "args": ["-c", WAIT]})
        assert r.status_code == 202, r.text
        ids.append(r.json()["id"])
    worker = Worker(runtime)
    end = time.monotonic() + 120
    while True:
        worker.run_once()
        states = {client.get(f"/api/v1/jobs/{i}", headers=u.headers).json()["state"]
                  for i, u in zip(ids, users, strict=True)}
        if states == {"RUNNING"} or time.monotonic() > end:
            break
        time.sleep(0.05)
    assert states == {"RUNNING"}, states
    return worker, ids


def test_two_accounts_are_asked_at_once(runtime: Runtime, client: TestClient,
                                        make_user: MakeUser) -> None:
    alice, bob = make_user("alice"), make_user("bob")
    local = runtime.sites.get("local")
    barrier = threading.Barrier(2, timeout=30)
    accounts = {"alice": Together(local.adapter, barrier), "bob": Together(local.adapter, barrier)}
    entry = dataclasses.replace(local, mapped=accounts)
    runtime.sites._entries["local"] = entry  # the test's own site entry
    worker, ids = _running(runtime, client, (alice, bob))
    for account in accounts.values():
        account.waiting = True
    assert poll(worker.ctx, entry)  # both calls passed the barrier together
    assert not barrier.broken
    for account in accounts.values():
        account.waiting = False
    let_jobs_go(runtime, *ids)


class Counted:
    """The local adapter, counting its status calls and the ids each asked about."""

    def __init__(self, inner: Adapter) -> None:
        self.inner = inner
        self.asked: list[list[str]] = []

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if name == "status":
            def counted(ids: Any, *args: Any, **kwargs: Any) -> Any:
                self.asked.append(sorted(ids))
                return attribute(ids, *args, **kwargs)
            return counted
        return attribute


class OwnAccount:
    """A researcher's own adapter on a site with a status account: never asked about
    jobs' state (`status`) or accounting (`usage`)."""

    def __init__(self, inner: Adapter) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in ("status", "usage"):
            raise AssertionError(f"{name} asked of a researcher's own account")
        return getattr(self.inner, name)


def test_a_status_account_is_asked_about_every_accounts_jobs_at_once(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    alice, bob = make_user("alice"), make_user("bob")
    local = runtime.sites.get("local")
    status = Counted(local.adapter)
    entry = dataclasses.replace(
        local, status=status,
        mapped={"alice": OwnAccount(local.adapter), "bob": OwnAccount(local.adapter)})
    runtime.sites._entries["local"] = entry  # the test's own site entry
    worker, ids = _running(runtime, client, (alice, bob))
    status.asked.clear()
    assert poll(worker.ctx, entry)
    assert len(status.asked) == 1 and len(status.asked[0]) == 2, status.asked
    let_jobs_go(runtime, *ids)
