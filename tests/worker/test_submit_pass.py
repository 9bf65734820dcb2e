"""A submission pass commits its quick units' outcomes together (gateway.worker.submission
.record.PassRecorder): on a site where each researcher is their own account, a pass holds
one job of each of several researchers, and each in a unit of work of its own was most of
a burst's time. A job with files to stage commits its own, never held with the others."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.services.lifecycle.submit_records import Submitted
from gateway.worker.context import StepContext
from gateway.worker.lanes import SEND
from gateway.worker.loop import Worker
from gateway.worker.submission import record, submit
from gateway.worker.submission.submit import submit_accepted
from tests.conftest import MakeUser


class Own:
    """The local adapter as one researcher's own (a distinct adapter per account)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_one_job_of_each_of_three_researchers_is_committed_in_one_unit_of_work(
        runtime: Runtime, client: TestClient, make_user: MakeUser,
        monkeypatch: pytest.MonkeyPatch) -> None:
    users = [make_user(name) for name in ("alice", "bob", "carol")]
    local = runtime.sites.get("local")
    entry = dataclasses.replace(local, owner_only=None,
                                mapped={u.principal.account_name: Own(local.adapter)
                                        for u in users})
    runtime.sites._entries["local"] = entry  # the test's own site entry
    commits: list[int] = []
    inner = record.record_submitted

    def counted(ctx: StepContext, site: Any, placed: Sequence[Submitted]) -> None:
        if placed:
            commits.append(len(placed))
        inner(ctx, site, placed)

    monkeypatch.setattr(record, "record_submitted", counted)
    monkeypatch.setattr(submit, "record_submitted", counted)
    ids = []
    for user in users:
        r = client.post("/api/v1/jobs", headers=user.headers,
                        json={"name": "one", "site": "local", "executable": "/bin/true"})
        assert r.status_code == 202, r.text
        ids.append((user, r.json()["id"]))
    worker = Worker(runtime, "w")
    assert submit_accepted(worker.ctx, entry)
    assert commits == [3]
    end = time.monotonic() + 120  # a deadline, not a count of cycles
    while any(client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()["state"]
              != "COMPLETED" for user, job_id in ids):
        assert time.monotonic() < end, "the jobs never completed"
        worker.run_site(entry, SEND)
        worker.run_once()
        time.sleep(0.05)
