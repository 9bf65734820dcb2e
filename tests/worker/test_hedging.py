"""Hedged and failover siblings: the first attempt to start wins, every other is revoked
(cancelled at its site, recorded REVOKED, never the job's result).

The arbitration runs in `statuses.apply_statuses`, fed here the statuses a scheduler's
status call returns, so each interleaving (who starts first, a late double start, a
sibling dropped before it ran) is exact and repeatable; the last test runs two real local
sites through the worker end to end. SQLite and PostgreSQL.
"""

from __future__ import annotations

import dataclasses
import time
from datetime import timedelta

from fastapi.testclient import TestClient

from adapters.base import JobStatus, NativeState
from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.domain.states import AttemptState
from gateway.metrics import Metrics
from gateway.repositories.jobs import targets
from gateway.runtime import Runtime
from gateway.services.lifecycle import cancels, claims, statuses, submit_records
from gateway.services.lifecycle.claims import Claim
from gateway.services.lifecycle.holder import LeaseHolder
from gateway.services.lifecycle.submit_records import Submitted
from gateway.services.sites.registry import SiteRegistry
from gateway.worker.loop import Worker
from gateway.worker.submission.submit import submit_accepted
from tests.conftest import MakeUser
from tests.waiting_jobs import let_jobs_go, waits
from tests.worker.test_worker_local import post, run_until

SPEC = {"name": "h", "executable": "/bin/true"}
RAN = (NativeState.RUNNING, NativeState.COMPLETED)


def twin_runtime(runtime: Runtime) -> Runtime:
    """The runtime with a second local site, 'twin' (what a federation of two looks like)."""
    local = runtime.sites.get("local")
    registry = SiteRegistry([local, dataclasses.replace(local, name="twin")])
    registry.sync(runtime.sessions)
    return dataclasses.replace(runtime, sites=registry)


def hedge(runtime: Runtime, job_id: str, *sites: str) -> None:
    with transaction(runtime.sessions) as session:
        targets.add(session, job_id, list(sites), "hedge", utcnow())


class Driver:
    """One worker's leases, and the two claims of one hedged job submitted at both sites."""

    def __init__(self, runtime: Runtime) -> None:
        self.rt = runtime
        self.holder = LeaseHolder("w", timedelta(minutes=5), timedelta(minutes=5))
        self.metrics = Metrics(runtime.sessions)

    def claim(self, site: str) -> Claim:
        with transaction(self.rt.sessions) as session:
            (claim,) = claims.claim_accepted(session, self.holder, self.rt.sites.get(site),
                                             10)
        return claim

    def submit(self, site: str, claim: Claim, native_id: str) -> None:
        with transaction(self.rt.sessions) as session:
            submit_records.record_submitted(session, site, [Submitted(claim, native_id)],
                                            actor=self.holder.actor, metrics=self.metrics)

    def status(self, claim: Claim, state: NativeState, exit_code: int | None = None) -> None:
        status = JobStatus(native_id="", state=state, raw_state=state.value, exit_code=exit_code,
                           # A scheduler gives a start time once the job ran.
                           started_at=utcnow() if state in RAN else None,
                           ended_at=utcnow() if state.is_final else None)
        with transaction(self.rt.sessions) as session:
            statuses.apply_statuses(session, [(claim.attempt_id, status)],
                                    actor=self.holder.actor, metrics=self.metrics)


    def cancels(self, site: str) -> list[int]:
        with self.rt.sessions() as session:
            return [c.attempt_id for c in cancels.pending_cancels(session, site)]


def attempt_states(client: TestClient, headers: dict[str, str], job_id: str
                   ) -> dict[str, AttemptState]:
    attempts = client.get(f"/api/v1/jobs/{job_id}", headers=headers).json()["attempts"]
    return {a["site"]: AttemptState(a["state"]) for a in attempts}


def job_of(client: TestClient, headers: dict[str, str], job_id: str) -> dict[str, object]:
    job: dict[str, object] = client.get(f"/api/v1/jobs/{job_id}", headers=headers).json()
    return job


def started_pair(runtime: Runtime, client: TestClient, make_user: MakeUser
                 ) -> tuple[Driver, dict[str, str], str, Claim, Claim]:
    rt = twin_runtime(runtime)
    user = make_user()
    job_id = post(client, user.headers, {**SPEC, "site": "local"})
    hedge(rt, job_id, "twin")
    d = Driver(rt)
    here, there = d.claim("local"), d.claim("twin")
    assert (here.job_id, there.job_id) == (job_id, job_id)
    assert (here.tag, there.tag) == (f"gw-{job_id}", f"gw-{job_id}.2")
    d.submit("local", here, "101")
    d.submit("twin", there, "202")
    return d, user.headers, job_id, here, there


def test_first_to_start_wins_and_the_sibling_is_revoked(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    d, headers, job_id, here, there = started_pair(runtime, client, make_user)
    assert job_of(client, headers, job_id)["state"] == "QUEUED"
    assert d.cancels("local") == d.cancels("twin") == []

    d.status(there, NativeState.RUNNING)  # twin starts first
    job = job_of(client, headers, job_id)
    assert (job["state"], job["site"]) == ("RUNNING", "twin")
    assert d.cancels("local") == [here.attempt_id] and d.cancels("twin") == []
    d.status(here, NativeState.CANCELLED)  # the revocation reached local
    d.status(there, NativeState.COMPLETED, 0)
    assert attempt_states(client, headers, job_id) == {"local": AttemptState.REVOKED,
                                        "twin": AttemptState.COMPLETED}
    job = job_of(client, headers, job_id)
    assert (job["state"], job["site"], job["exit_code"]) == ("COMPLETED", "twin", 0)
    reasons = [e["reason"] for e in client.get(f"/api/v1/jobs/{job_id}/events",
                                                headers=headers).json()["items"]]
    assert "started first at site 'twin'; any other attempt is revoked" in reasons


def test_a_late_double_start_is_counted_and_never_the_result(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    d, headers, job_id, here, there = started_pair(runtime, client, make_user)
    d.status(here, NativeState.RUNNING)
    d.status(there, NativeState.RUNNING)  # before its cancel reached twin
    assert d.metrics.double_starts._value.get() == 1
    assert d.cancels("twin") == [there.attempt_id]
    d.status(there, NativeState.COMPLETED, 0)  # ran to the end anyway: still not the job's
    assert job_of(client, headers, job_id)["state"] == "RUNNING"
    d.status(here, NativeState.FAILED, 3)
    assert attempt_states(client, headers, job_id) == {"local": AttemptState.FAILED,
                                        "twin": AttemptState.REVOKED}
    job = job_of(client, headers, job_id)
    assert (job["state"], job["exit_code"], job["site"]) == ("FAILED", 3, "local")


def test_a_sibling_dropped_before_it_ran_leaves_the_job_to_the_other(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    d, headers, job_id, here, there = started_pair(runtime, client, make_user)
    d.status(here, NativeState.FAILED)  # e.g. the site's admin killed it while queued
    job = job_of(client, headers, job_id)
    assert job["state"] == "QUEUED"
    d.status(there, NativeState.FAILED)  # the last one: now it is the job's end
    assert job_of(client, headers, job_id)["state"] == "FAILED"


def test_a_sibling_still_staging_is_revoked_before_it_is_submitted(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    rt = twin_runtime(runtime)
    user = make_user()
    job_id = post(client, user.headers, {**SPEC, "site": "local"})
    hedge(rt, job_id, "twin")
    d = Driver(rt)
    here, there = d.claim("local"), d.claim("twin")
    d.submit("local", here, "101")
    d.status(here, NativeState.RUNNING)
    with transaction(rt.sessions) as session:
        assert cancels.cancel_before_submit(session, d.holder, there) is True
    assert attempt_states(client, user.headers, job_id)["twin"] is AttemptState.REVOKED
    with transaction(rt.sessions) as session:  # and nobody claims the target again
        assert claims.claim_accepted(session, d.holder, rt.sites.get("twin"), 10) == []


def test_cancel_reaches_every_sibling(runtime: Runtime, client: TestClient,
                                      make_user: MakeUser) -> None:
    d, headers, job_id, here, there = started_pair(runtime, client, make_user)
    assert client.post(f"/api/v1/jobs/{job_id}/cancel", headers=headers).status_code == 202
    assert d.cancels("local") == [here.attempt_id] and d.cancels("twin") == [there.attempt_id]
    d.status(here, NativeState.CANCELLED)
    assert job_of(client, headers, job_id)["state"] == "CANCELLED"


def test_two_real_sites_one_result(runtime: Runtime, client: TestClient,
                                   make_user: MakeUser) -> None:
    rt = twin_runtime(runtime)
    user = make_user()
    # Both local sites start it at once (submitted at both before either is polled): the
    # second to be seen running is a double start, revoked all the same. It runs until
    # the test lets it go, once one has been seen running.
    job_id = post(client, user.headers, {
        "name": "both", "executable": "/bin/sh", "args": ["-c", waits()], "site": "local"})
    hedge(rt, job_id, "twin")
    worker = Worker(rt)
    for site in ("local", "twin"):
        assert submit_accepted(worker.ctx, rt.sites.get(site))
    run_until(worker, client, user.headers, job_id, {"RUNNING"})
    assert len(let_jobs_go(rt, job_id)) == 2
    job = run_until(worker, client, user.headers, job_id, {"COMPLETED", "FAILED"})
    assert job["state"] == "COMPLETED"
    # The job ends with its run; the other attempt's end (cancelled at its site, or its
    # own) may be seen only at a later status call, when the machine is busy.
    deadline = time.monotonic() + 60
    while not all(AttemptState(a["state"]).is_final for a in job["attempts"]) \
            and time.monotonic() < deadline:
        worker.run_once()
        job = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()
    assert job["state"] == "COMPLETED"
    ends = sorted(a["state"] for a in job["attempts"])
    assert ends == ["COMPLETED", "REVOKED"], job["attempts"]


def test_the_jobs_own_site_claims_it_after_a_sibling_did(
        runtime: Runtime, client: TestClient, make_user: MakeUser) -> None:
    rt = twin_runtime(runtime)
    user = make_user()
    job_id = post(client, user.headers, {**SPEC, "site": "local"})
    hedge(rt, job_id, "twin")
    d = Driver(rt)
    there = d.claim("twin")  # the sibling's site came first in the cycle
    assert job_of(client, user.headers, job_id)["state"] == "STAGING_IN"
    here = d.claim("local")  # the job's own site still gets its attempt
    assert (there.job_id, here.job_id) == (job_id, job_id)
    with transaction(rt.sessions) as session:  # once each
        assert claims.claim_accepted(session, d.holder, rt.sites.get("local"), 10) == []
        assert claims.claim_accepted(session, d.holder, rt.sites.get("twin"), 10) == []
