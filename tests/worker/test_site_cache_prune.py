"""A worker prunes each site's staging caches on that site's follow lane (here the local
site's, through its own transport): at its first pass, then not again until
SITE_CACHE_PRUNE_SECONDS have passed; `site_cache_idle_days: 0` keeps everything; on a
site of many accounts, only the caches of those who had jobs there."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from adapters.errors import SiteUnavailable
from gateway.runtime import Runtime
from gateway.worker.lanes import FOLLOW, SEND
from gateway.worker.loop import Worker
from gateway.worker.staging.site_caches import (
    SITE_CACHE_PRUNE_SECONDS,
    SiteCachePruning,
    prune_site_caches,
)
from tests.conftest import MakeUser


def old_entry(runtime: Runtime, name: str) -> Path:
    site = runtime.sites.get("local")
    cache = Path(site.cache_dir(site.owner_only))
    cache.mkdir(mode=0o700, parents=True, exist_ok=True)
    entry = cache / hashlib.sha256(name.encode()).hexdigest()
    entry.write_bytes(b"staged long ago")
    then = time.time() - 30 * 86400
    os.utime(entry, (then, then))
    return entry


def test_each_site_is_pruned_on_its_follow_lane_now_and_then(
        runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    first = old_entry(runtime, "first")
    worker = Worker(runtime, "w")
    local = runtime.sites.get("local")
    worker.run_site(local, SEND)
    assert first.exists()  # not the send lane's work
    worker.run_site(local, FOLLOW)
    assert not first.exists()
    second = old_entry(runtime, "second")
    clock = time.monotonic()
    monkeypatch.setattr(time, "monotonic", lambda: clock + 120)
    worker.run_site(local, FOLLOW)
    assert second.exists()  # not again so soon
    monkeypatch.setattr(time, "monotonic", lambda: clock + SITE_CACHE_PRUNE_SECONDS + 60)
    worker.run_site(local, FOLLOW)
    assert not second.exists()


def test_zero_idle_days_keeps_everything(runtime: Runtime,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime.settings, "site_cache_idle_days", 0.0)
    entry = old_entry(runtime, "kept")
    Worker(runtime, "w").run_once()
    assert entry.exists()


class _Unreachable:
    """An adapter whose site cannot be reached: each command raises SiteUnavailable."""

    def __init__(self) -> None:
        self.calls = 0
        self.files = self

    def run(self, argv: Sequence[str], **_: object) -> None:
        self.calls += 1
        raise SiteUnavailable("connection refused")


def test_a_site_out_of_reach_is_tried_once_and_the_others_still_pruned(
        runtime: Runtime) -> None:
    local = runtime.sites.get("local")
    unreachable = _Unreachable()
    down = dataclasses.replace(local, name="down", owner_only=None,
                               mapped={"alice": unreachable, "bob": unreachable})  # type: ignore[dict-item]
    entry = old_entry(runtime, "local entry")
    pruned = prune_site_caches([down, local], 14 * 86400)
    assert unreachable.calls == 1  # not once per account
    assert pruned.files == 1 and not entry.exists()


class _Counted:
    """An adapter that counts the caches pruned through it (each a `files` use)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.pruned = 0

    @property
    def files(self) -> Any:
        self.pruned += 1
        return self.inner.files

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_on_a_site_of_many_accounts_only_those_who_had_jobs_there_are_pruned(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    """A certificate site may list hundreds of researchers: each cache pruned is a
    connection and a command, so only the caches of those who ever had a job there."""
    alice = make_user("alice")
    local = runtime.sites.get("local")
    accounts = {"alice": _Counted(local.adapter), "bob": _Counted(local.adapter)}
    entry = dataclasses.replace(local, owner_only=None, mapped=accounts)
    runtime.sites._entries["local"] = entry  # the test's own site entry
    r = client.post("/api/v1/jobs", headers=alice.headers,
                    json={"name": "one", "executable": "/bin/true"})
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    worker = Worker(runtime, "w")
    end = time.monotonic() + 120
    while client.get(f"/api/v1/jobs/{job_id}", headers=alice.headers).json()["state"] != (
            "COMPLETED"):
        assert time.monotonic() < end, "the job never completed"
        worker.run_once()
        time.sleep(0.05)
    for account in accounts.values():
        account.pruned = 0
    SiteCachePruning().step(worker.ctx, entry)
    assert (accounts["alice"].pruned, accounts["bob"].pruned) == (1, 0)
