"""The bank through the API and the worker on the local site (real processes, its own
usage records; SQLite and PostgreSQL): a lien at submit, the charge from the site's
record at the end, a refusal when the project cannot pay, a release for a job that never
ran, a crash between the record and the charge, and no overspend under concurrency."""

from __future__ import annotations

import sys
import threading
import time
import uuid
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from gateway.accounting.rates import ONE_SU_PER_CORE_HOUR, Usage, cost
from gateway.db.bank_models import Allocation, LedgerEntry, Lien, Quote, UsageRow
from gateway.db.engine import transaction
from gateway.domain.jobspec import JobSpec
from gateway.domain.principal import Principal
from gateway.runtime import Runtime
from gateway.services import projects
from gateway.services.jobs import submission as job_service
from gateway.services.money import allocations, audit, bank
from gateway.services.money.allocations import Grant
from gateway.services.money.bank import InsufficientFunds
from gateway.settings import Settings
from gateway.store.blobs import BlobStore
from gateway.worker.loop import Worker
from tests.conftest import MakeUser, TestUser
from tests.worker.test_worker_local import post, run_until

PY = sys.executable


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"allocations_enforced": True})


def _grant(runtime: Runtime, user: TestUser, su: int) -> int:
    now = runtime.clock()
    with transaction(runtime.sessions) as s:
        project = job_service.jobs.personal_project(s.connection(), user.principal.user_id)
        assert project is not None
        a = allocations.grant(s, Grant(project.name, "*", su * 1000, now - timedelta(days=1),
                                       now + timedelta(days=30)), {"local"}, "committee",
                              "startup allocation", now)
        return a.id


def _allocation(runtime: Runtime, allocation_id: int) -> Allocation:
    with runtime.sessions() as s:
        a = s.get(Allocation, allocation_id)
        assert a is not None
        s.expunge(a)
        return a


def _settled(worker: Worker, runtime: Runtime, job_id: str, rounds: int = 50) -> None:
    for _ in range(rounds):
        with runtime.sessions() as s:
            if not s.scalars(select(Lien).where(Lien.job_id == job_id,
                                                Lien.status == "held")).first():
                return
        worker.run_once()
    raise AssertionError(f"job {job_id} still holds a lien")


def test_a_job_is_charged_from_the_sites_record(client: TestClient, runtime: Runtime,
                                                make_user: MakeUser) -> None:
    user = make_user()
    alloc = _grant(runtime, user, 10)
    job_id = post(client, user.headers, {
        "name": "two cores", "executable": PY, "args": ["-c", "import time; time.sleep(1.5)"],
        "resources": {"ranks": 1, "threads_per_rank": 2, "walltime": 600}})
    held = _allocation(runtime, alloc)
    quote = cost(ONE_SU_PER_CORE_HOUR, Usage(600, 2))
    assert (held.held_milli, held.available_milli) == (quote, 10_000 - quote)
    worker = Worker(runtime)
    run_until(worker, client, user.headers, job_id, {"COMPLETED"})
    _settled(worker, runtime, job_id)
    with runtime.sessions() as s:
        [row] = s.scalars(select(UsageRow).where(UsageRow.job_id == job_id)).all()
        kinds = [e.kind for e in s.scalars(select(LedgerEntry).where(
            LedgerEntry.job_id == job_id).order_by(LedgerEntry.id))]
    assert row.source == "local" and row.cores == 2 and row.elapsed >= 1
    assert row.charged_milli == cost(ONE_SU_PER_CORE_HOUR, Usage(row.elapsed, 2))
    assert kinds == ["charge", "charge"]  # liens are reservations, outside the ledger
    after = _allocation(runtime, alloc)
    assert (after.held_milli, after.used_milli) == (0, row.charged_milli)
    assert after.available_milli == 10_000 - row.charged_milli
    # More cycles change nothing: the record was applied once.
    worker.run_once()
    assert _allocation(runtime, alloc).used_milli == row.charged_milli


def test_refused_at_submit_when_the_project_cannot_pay(client: TestClient, runtime: Runtime,
                                                       make_user: MakeUser) -> None:
    user = make_user()
    _grant(runtime, user, 1)
    r = client.post("/api/v1/jobs", headers=user.headers, json={
        "name": "big", "executable": "/bin/true",
        "resources": {"ranks": 1, "threads_per_rank": 2, "walltime": 3600}})
    assert r.status_code == 422, r.text
    problem: dict[str, Any] = r.json()
    assert problem["quote_su"] == "2.000" and problem["available_su"] == "1.000"
    assert "Ask for less" in problem["detail"]
    assert client.get("/api/v1/jobs", headers=user.headers).json()["items"] == []


def test_a_project_without_an_allocation_is_refused(client: TestClient,
                                                   make_user: MakeUser) -> None:
    r = client.post("/api/v1/jobs", headers=make_user().headers,
                    json={"name": "x", "executable": "/bin/true"})
    assert r.status_code == 422 and "0.000 SU available" in r.json()["detail"]


def test_cancelled_while_waiting_is_charged_nothing(client: TestClient, runtime: Runtime,
                                                    make_user: MakeUser) -> None:
    user = make_user()
    alloc = _grant(runtime, user, 5)
    job_id = post(client, user.headers, {"name": "never", "executable": "/bin/true"})
    assert client.post(f"/api/v1/jobs/{job_id}/cancel", headers=user.headers).status_code == 202
    _settled(Worker(runtime), runtime, job_id)
    a = _allocation(runtime, alloc)
    assert (a.available_milli, a.held_milli, a.used_milli) == (5000, 0, 0)


def test_a_crash_between_the_record_and_the_charge_charges_once(
        client: TestClient, runtime: Runtime, make_user: MakeUser,
        monkeypatch: pytest.MonkeyPatch) -> None:
    user = make_user()
    alloc = _grant(runtime, user, 5)
    job_id = post(client, user.headers, {"name": "once", "executable": PY,
                                         "args": ["-c", "import time; time.sleep(1.2)"]})
    real_settle = bank.settle_locked

    def crash(*args: Any, **kwargs: Any) -> Any:
        real_settle(*args, **kwargs)  # every leg posted and flushed ...
        raise KeyboardInterrupt("killed before the commit")  # ... and never committed

    monkeypatch.setattr(bank, "settle_locked", crash)
    worker = Worker(runtime)
    end = time.monotonic() + 120  # the job runs, ends, and its record is settled
    with pytest.raises(KeyboardInterrupt):
        while time.monotonic() < end:
            worker.run_once()
            time.sleep(0.05)
    with runtime.sessions() as s:
        assert s.scalars(select(UsageRow).where(UsageRow.job_id == job_id)).all() == []
    monkeypatch.setattr(bank, "settle_locked", real_settle)
    _settled(Worker(runtime), runtime, job_id)
    with runtime.sessions() as s:
        charges = s.scalars(select(LedgerEntry).where(
            LedgerEntry.job_id == job_id, LedgerEntry.kind == "charge",
            LedgerEntry.account == "used")).all()
        [row] = s.scalars(select(UsageRow).where(UsageRow.job_id == job_id)).all()
    assert len(charges) == 1 and charges[0].amount_milli == row.charged_milli > 0
    assert _allocation(runtime, alloc).used_milli == charges[0].amount_milli


@pytest.mark.parametrize("database_kind", ["postgresql"], indirect=True)
def test_200_concurrent_submissions_against_50_jobs_worth(runtime: Runtime,
                                                         make_user: MakeUser) -> None:
    user = make_user()
    alloc = _grant(runtime, user, 50)  # each job: 1 core x 1 h = 1 SU
    spec = JobSpec.model_validate({"name": "one", "executable": "/bin/true"})
    start = threading.Barrier(20)
    outcomes: list[str] = []
    errors: list[BaseException] = []

    def submit_ten() -> None:
        try:
            start.wait()
            for _ in range(10):
                try:
                    with runtime.unit_of_work() as session:
                        job_service.submit(session, runtime.sites, user.principal, spec,
                                           charged=True,
                                           store=BlobStore(runtime.settings.store_dir))
                    outcomes.append("accepted")
                except InsufficientFunds:
                    outcomes.append("refused")
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=submit_ten) for _ in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert (outcomes.count("accepted"), outcomes.count("refused")) == (50, 150)
    a = _allocation(runtime, alloc)
    assert (a.available_milli, a.held_milli) == (0, 50_000)
    with runtime.sessions() as s:  # 50 liens chained by concurrent statements: one chain
        verdict = audit.verify(s, runtime.keys, runtime.clock())
    assert verdict["ok"] and verdict["ledger_problems"] == [], verdict


def test_usage_is_charged_within_one_cycle_of_the_record(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    # The local site writes its record when the job ends: the charge must follow in the
    # cycle that sees the job finished, or the next one at the latest.
    user = make_user()
    _grant(runtime, user, 5)
    job_id = post(client, user.headers, {"name": "quick", "executable": PY,
                                         "args": ["-c", "import time; time.sleep(1.1)"]})
    worker = Worker(runtime)
    run_until(worker, client, user.headers, job_id, {"COMPLETED"})
    cycles = 0
    while True:
        with runtime.sessions() as s:
            if s.scalars(select(UsageRow).where(UsageRow.job_id == job_id)).first():
                break
        assert cycles < 1, "usage not charged one cycle after the job ended"
        worker.run_once()
        cycles += 1


def test_the_submit_lien_draws_earliest_ending_first_and_splits(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    # On PostgreSQL the one-statement lien takes the whole quote from the earliest-ending
    # allocation when it can; a split falls back to the locked path: same result.
    user = make_user()
    later = _grant(runtime, user, 10)
    now = runtime.clock()
    with transaction(runtime.sessions) as s:
        project = job_service.jobs.personal_project(s.connection(), user.principal.user_id)
        assert project is not None
        sooner = allocations.grant(s, Grant(project.name, "*", 1500, now - timedelta(days=1),
                                            now + timedelta(days=2)), {"local"}, "committee",
                                   "ends sooner", now).id
    spec = {"name": "one", "executable": "/bin/true"}  # 1 core x 1 h: 1 SU
    first = post(client, user.headers, spec)
    second = post(client, user.headers, spec)
    with runtime.sessions() as s:
        drawn = {job: [(lien.allocation_id, lien.amount_milli) for lien in s.scalars(
            select(Lien).where(Lien.job_id == job).order_by(Lien.id))]
            for job in (first, second)}
    assert drawn == {first: [(sooner, 1000)], second: [(sooner, 500), (later, 500)]}
    assert (_allocation(runtime, sooner).available_milli,
            _allocation(runtime, later).available_milli) == (0, 9500)


def _shared_project(runtime: Runtime, member: TestUser, su: int) -> tuple[str, int]:
    """A project `member` belongs to, with an allocation of `su`."""
    admin = Principal(user_id="admin", issuer="local", subject="admin", username="admin",
                      roles=frozenset({"admin"}))
    now, name = runtime.clock(), f"p{uuid.uuid4().hex[:8]}"
    with transaction(runtime.sessions) as s:
        projects.create(s, admin, name, None, now)
        projects.set_member(s, admin, name, member.principal.account_name or "", pi=False)
        a = allocations.grant(s, Grant(name, "*", su * 1000, now - timedelta(days=1),
                                       now + timedelta(days=30)), {"local"}, "committee",
                              "shared", now)
        return name, a.id


def _bank_rows(runtime: Runtime, job_id: str) -> tuple[int, int, int]:
    with runtime.sessions() as s:
        return (len(s.scalars(select(Quote).where(Quote.job_id == job_id)).all()),
                len(s.scalars(select(Lien).where(Lien.job_id == job_id)).all()),
                len(s.scalars(select(LedgerEntry).where(LedgerEntry.job_id == job_id)).all()))


def test_a_named_project_pays_and_one_the_user_is_not_in_is_refused(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    # On PostgreSQL the lien is taken with the job's first event; same answers.
    user, stranger = make_user(), make_user()
    _grant(runtime, user, 10)  # the personal project: must not pay for the named one
    name, shared = _shared_project(runtime, user, 3)
    job_id = post(client, user.headers, {"name": "shared", "executable": "/bin/true",
                                         "project": name})
    assert client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()["project"] == name
    assert _allocation(runtime, shared).held_milli == 1000
    assert _bank_rows(runtime, job_id) == (1, 1, 0)  # quote, lien, no ledger legs
    r = client.post("/api/v1/jobs", headers=stranger.headers,
                    json={"name": "x", "executable": "/bin/true", "project": name})
    assert r.status_code == 422, r.text
    assert r.json()["detail"] == f"You are not a member of a project named '{name}'."
    assert _allocation(runtime, shared).held_milli == 1000
    with runtime.sessions() as s:
        assert len(s.scalars(select(Quote)).all()) == 1  # the refused one stored none


def test_a_keyed_submission_holds_one_lien_however_often_it_is_sent(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    alloc = _grant(runtime, user, 5)
    headers = {**user.headers, "Idempotency-Key": "k-1"}
    spec = {"name": "keyed", "executable": "/bin/true"}
    first = client.post("/api/v1/jobs", headers=headers, json=spec)
    again = client.post("/api/v1/jobs", headers=headers, json=spec)
    assert first.status_code == again.status_code == 202, again.text
    assert first.json()["id"] == again.json()["id"]
    assert _bank_rows(runtime, first.json()["id"]) == (1, 1, 0)  # quote, lien, no ledger legs
    assert _allocation(runtime, alloc).held_milli == 1000


def test_a_job_a_site_cannot_take_holds_nothing(client: TestClient, runtime: Runtime,
                                                make_user: MakeUser) -> None:
    # Nothing of the bank is written for a job no site can take.
    user = make_user()
    alloc = _grant(runtime, user, 5)
    r = client.post("/api/v1/jobs", headers=user.headers, json={
        "name": "huge", "executable": "/bin/true", "site": "local",
        "resources": {"ranks": 100000, "walltime": 60}})
    assert r.status_code == 422, r.text
    assert _allocation(runtime, alloc).held_milli == 0
    with runtime.sessions() as s:
        assert s.scalars(select(Quote)).all() == [] and s.scalars(select(Lien)).all() == []

