"""The lien a submission holds, and the audit links it leaves, on SQLite and PostgreSQL
(where the lien is taken by the statement that writes the job's first event,
gateway.repositories.money.fast_hold, when one allocation covers it, and one link chains both):
the chain verifies, each job's story has its state change and then its lien, whose link
names the lien, allocation and amount the database holds (and no ledger legs); a lien
split across allocations (the locked path) is chained too; a refused submission leaves
no link."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import func, select

from gateway.db.audit_models import AuditEvent
from gateway.db.bank_models import Allocation, LedgerEntry, Lien
from gateway.db.engine import transaction
from gateway.domain.jobspec import JobSpec
from gateway.repositories.money import audit
from gateway.runtime import Runtime
from gateway.services.jobs import submission as job_service
from gateway.services.money import allocations
from gateway.services.money import audit as audit_service
from gateway.services.money.allocations import Grant
from gateway.services.money.bank import InsufficientFunds
from gateway.settings import Settings
from gateway.store.blobs import BlobStore
from gateway.worker.periodic.audit_sequencer import take_in
from tests.conftest import MakeUser, TestUser

SPEC = JobSpec.model_validate({"name": "one", "executable": "/bin/true"})  # 1 SU each


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"allocations_enforced": True})


def _grant(runtime: Runtime, user: TestUser, su: int, days: int = 30) -> int:
    now = runtime.clock()
    with transaction(runtime.sessions) as s:
        project = job_service.jobs.personal_project(s.connection(), user.principal.user_id)
        assert project is not None
        return allocations.grant(s, Grant(project.name, "*", su * 1000,
                                          now - timedelta(days=1), now + timedelta(days=days)),
                                 {"local"}, "committee", "startup", now).id


def _submit(runtime: Runtime, user: TestUser) -> str:
    with runtime.unit_of_work() as session:
        row, _ = job_service.submit(session, runtime.sites, user.principal, SPEC,
                                    charged=True, store=BlobStore(runtime.settings.store_dir))
    return str(row["id"])


def _verified(runtime: Runtime) -> None:
    with runtime.sessions() as session:
        verdict = audit_service.verify(session, runtime.keys, runtime.clock())
    assert verdict["ok"], verdict


def _links(runtime: Runtime, job_id: str) -> list[tuple[str, dict[str, Any]]]:
    with runtime.engine.connect() as conn:
        return [(link.kind, dict(link.data)) for link in audit.of_subject(conn, f"job:{job_id}")]


def _story(runtime: Runtime, job_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The job's links, a lien carried by a state change's link (PostgreSQL's one
    statement) told as a link of its own after it."""
    with runtime.engine.connect() as conn:
        return [(kind, dict(data)) for link in audit.of_subject(conn, f"job:{job_id}")
                for kind, data in link.told()]


def _liens(runtime: Runtime, job_id: str) -> list[Lien]:
    with runtime.sessions() as s:
        found = list(s.scalars(select(Lien).where(Lien.job_id == job_id).order_by(Lien.id)))
        s.expunge_all()
        return found


def test_each_submission_chains_its_state_change_then_its_lien(
        runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    alloc = _grant(runtime, user, 10)
    jobs = [_submit(runtime, user) for _ in range(3)]
    _verified(runtime)
    for job_id in jobs:
        [lien] = _liens(runtime, job_id)
        assert (lien.allocation_id, lien.amount_milli, lien.status) == (alloc, 1000, "held")
        (state, _), (kind, lien_link) = _story(runtime, job_id)
        assert (state, kind) == ("job.state", "lien")
        assert (lien_link["lien"], lien_link["allocation"], lien_link["amount_milli"]) == (
            lien.id, alloc, 1000)
        with runtime.sessions() as s:  # a lien is a reservation: no ledger legs
            assert not s.scalars(select(LedgerEntry).where(LedgerEntry.job_id == job_id)).all()
        # PostgreSQL's one statement wrote both: one link (one row and hash fewer).
        one_link = runtime.engine.dialect.name == "postgresql"
        assert len(_links(runtime, job_id)) == (1 if one_link else 2)
    with runtime.sessions() as s:
        a = s.get_one(Allocation, alloc)
        assert (a.available_milli, a.held_milli) == (7000, 3000)


def test_a_lien_split_across_allocations_is_chained_too(runtime: Runtime,
                                                        make_user: MakeUser) -> None:
    user = make_user()
    soon = _grant(runtime, user, 1, days=2)  # half of the job's quote...
    with runtime.unit_of_work() as s:
        allocations.adjust(s, soon, -500, "committee", "half of it", runtime.clock())
    later = _grant(runtime, user, 5)  # ...the rest from the one ending later
    job_id = _submit(runtime, user)
    _verified(runtime)
    liens = _liens(runtime, job_id)
    assert [(lien.allocation_id, lien.amount_milli) for lien in liens] == [
        (soon, 500), (later, 500)]
    kinds = [kind for kind, _ in _story(runtime, job_id)]
    assert kinds == ["job.state", "lien", "lien"]


def test_a_refused_submission_leaves_no_link(runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    _grant(runtime, user, 1)
    first = _submit(runtime, user)
    with runtime.engine.connect() as conn:
        before = conn.scalar(select(func.count()).select_from(AuditEvent))
    with pytest.raises(InsufficientFunds):
        _submit(runtime, user)
    with runtime.engine.connect() as conn:
        assert conn.scalar(select(func.count()).select_from(AuditEvent)) == before
    take_in(runtime, every=0)
    _verified(runtime)
    assert [kind for kind, _ in _story(runtime, first)] == ["job.state", "lien"]

