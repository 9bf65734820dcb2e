"""The audit chain on SQLite and PostgreSQL: appends ride the caller's transaction (a
rollback leaves no event), the bank's postings are chained, concurrent appenders leave one
unbroken chain, and rows tampered with by SQL straight to the tables (edited, deleted,
swapped, the tail cut) are caught at the first broken link; so are ledger rows and
running sums that no longer agree."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import select, text, update
from sqlalchemy.orm import Session

from gateway.accounting.charging import charge_for
from gateway.accounting.rates import Rate
from gateway.db.bank_models import Allocation, AuditEvent
from gateway.db.engine import transaction
from gateway.db.models import Project
from gateway.repositories.money import audit
from gateway.runtime import Runtime
from gateway.schemas.audit import AuditVerifyOut
from gateway.services import projects
from gateway.services.money import allocations, bank
from gateway.services.money import audit as audit_service
from gateway.services.money.allocations import Grant
from gateway.services.money.bank import Payer
from tests.conftest import MakeUser
from tests.services import bank_fixtures as bf
from tests.services.bank_fixtures import NOW, YEAR

_events = AuditEvent.__table__


def verify(runtime: Runtime) -> AuditVerifyOut:
    with runtime.sessions() as session:
        return audit_service.verify(session, NOW)


def append(runtime: Runtime, n: int, tag: str = "e", per: int = 1) -> None:
    """n transactions of `per` events each."""
    for i in range(n):
        with transaction(runtime.sessions) as s:
            for j in range(per):
                suffix = f"{i}" if per == 1 else f"{i}.{j}"
                audit.append(s, "test", f"thing:{tag}{suffix}", "tester",
                             {"i": i, "tag": tag, "é": [j, 0.5, None]},
                             NOW + timedelta(seconds=i))


def kinds(runtime: Runtime) -> list[str]:
    with runtime.sessions() as s:
        return list(s.scalars(select(AuditEvent.kind).order_by(AuditEvent.id)))


def test_an_intact_chain_verifies(runtime: Runtime) -> None:
    assert verify(runtime)["ok"] and verify(runtime)["head"] is None
    append(runtime, 5)
    report = verify(runtime)
    assert (report["ok"], report["events"], report["broken"]) == (True, 5, None)
    assert report["head"] is not None and report["head"]["last_id"] == 5


def test_a_rolled_back_change_leaves_no_event(runtime: Runtime) -> None:
    append(runtime, 1)
    with pytest.raises(RuntimeError), transaction(runtime.sessions) as s:
        audit.append(s, "test", "thing:lost", "tester", {}, NOW)
        raise RuntimeError("the change fails")
    with transaction(runtime.sessions) as s:
        audit.append(s, "test", "thing:kept", "tester", {}, NOW)
        with pytest.raises(RuntimeError), s.begin_nested():
            audit.append(s, "test", "thing:savepoint", "tester", {}, NOW)
            raise RuntimeError("the savepoint rolls back")
        audit.append(s, "test", "thing:after", "tester", {}, NOW)
    with runtime.sessions() as s:
        subjects = list(s.scalars(select(AuditEvent.subject).order_by(AuditEvent.id)))
    assert subjects == ["thing:e0", "thing:kept", "thing:after"]
    assert verify(runtime)["ok"]


def test_the_bank_postings_are_chained(runtime: Runtime, make_user: MakeUser) -> None:
    owner = make_user().principal.user_id
    with transaction(runtime.sessions) as s:
        bf.site(s, "alpha")
        p = bf.project(s, owner)
        a = allocations.grant(s, Grant(p.name, "*", 100_000, NOW - YEAR, NOW + YEAR),
                              {"alpha"}, "committee", "award 2026", NOW)
        allocations.set_status(s, a.id, "suspended", "committee", "overdue", NOW)
        allocations.set_status(s, a.id, "active", "committee", "report in", NOW)
        job = bf.job(s, owner, p.id)
        bank.hold(s, job, Payer(p.id, p.name), "alpha", 10_000, NOW, "alice")
        row, record = bf.usage_row(s, job, "alpha", "7", elapsed=1800, cores=2)
        charge = charge_for(record, Rate(core_hour_milli=1000), walltime_seconds=5 * 3600,
                            refund_cap_milli=0)
        bank.settle(s, job, [(row, charge)], NOW, "worker")
    assert kinds(runtime) == ["allocation.grant", "deposit", "allocation.status",
                              "allocation.status", "lien", "charge", "release"]
    with runtime.sessions() as s:
        [lien] = audit.of_subject(s.connection(), f"job:{job}")[:1]
    assert lien.kind == "lien" and lien.actor == "alice"
    assert (lien.data["allocation"], lien.data["amount_milli"]) == (a.id, 10_000)
    assert verify(runtime)["ok"]


def test_a_big_batch_chains_like_small_ones(runtime: Runtime) -> None:
    append(runtime, 1, "a", per=audit.ONE_STATEMENT_MAX + 5)
    append(runtime, 2, "b", per=3)
    report = verify(runtime)
    assert (report["ok"], report["events"]) == (True, audit.ONE_STATEMENT_MAX + 11)
    with runtime.sessions() as s:
        subjects = list(s.scalars(select(AuditEvent.subject).order_by(AuditEvent.id)))
    assert subjects[:2] == ["thing:a0.0", "thing:a0.1"] and subjects[-1] == "thing:b1.2"


def test_project_and_membership_changes_are_chained(runtime: Runtime,
                                                    make_user: MakeUser) -> None:
    admin = make_user(roles=("admin",)).principal
    member = make_user()
    name = member.principal.username or ""
    with transaction(runtime.sessions) as s:
        p = projects.create(s, admin, "climate", "models", NOW)
        projects.set_member(s, admin, "climate", name, pi=False)
        projects.set_member(s, admin, "climate", name, pi=True)
        projects.remove_member(s, admin, "climate", name)
    with runtime.sessions() as s:
        links = audit.of_subject(s.connection(), f"project:{p.id}")
    assert [(link.kind, link.data.get("from"), link.data.get("to")) for link in links] == [
        ("project.create", None, None), ("project.member.add", None, "member"),
        ("project.member.role", "member", "manager"),
        ("project.member.remove", "manager", None)]
    assert {link.actor for link in links} == {admin.display}
    assert verify(runtime)["ok"]


def test_concurrent_appenders_leave_one_chain(runtime: Runtime) -> None:
    # Transactions of one, two and three events (one statement on PostgreSQL) and of 20
    # (past ONE_STATEMENT_MAX: the locked, COPY path) interleave.
    sizes = [1, 2, 3, 1, 2, 20]
    threads = [threading.Thread(target=append, args=(runtime, 10, f"t{n}-", size))
               for n, size in enumerate(sizes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = 10 * sum(sizes)
    report = verify(runtime)
    assert (report["ok"], report["events"]) == (True, total)
    with runtime.sessions() as s:
        prevs = list(s.scalars(select(AuditEvent.prev_hash)))
    assert len(set(prevs)) == total  # no two events follow the same one: never forked


def _tamper(runtime: Runtime, *statements: str) -> None:
    with transaction(runtime.sessions) as s:
        for statement in statements:
            s.execute(text(statement))


def _swap(session: Session, a: int, b: int) -> None:
    """Rows a and b trade every column but their ids (through a spare hash: the column is
    unique)."""
    rows = {r.id: r._asdict() for r in session.execute(
        select(_events).where(_events.c.id.in_((a, b))))}
    session.execute(update(_events).where(_events.c.id == a).values(hash="spare"))
    for target, source in ((b, a), (a, b)):
        values = {k: v for k, v in rows[source].items() if k != "id"}
        session.execute(update(_events).where(_events.c.id == target).values(**values))


@pytest.mark.parametrize("tamper, broken_at, fault", [
    ("UPDATE audit_events SET actor = 'mallory' WHERE id = 3", 3, "edited"),
    ("UPDATE audit_events SET at = at WHERE id = 3", None, None),  # a no-op is no tamper
    ("UPDATE audit_events SET kind = 'charge' WHERE id = 5", 5, "edited"),
    ("DELETE FROM audit_events WHERE id = 3", 4, "deleted"),
    ("DELETE FROM audit_events WHERE id = 1", 2, "deleted"),
    ("DELETE FROM audit_events WHERE id = 6", 6, "truncated"),
])
def test_tampering_is_named_at_the_first_broken_link(
        runtime: Runtime, tamper: str, broken_at: int | None, fault: str | None) -> None:
    append(runtime, 6)
    _tamper(runtime, tamper)
    report = verify(runtime)
    broken = report["broken"]
    if fault is None:
        assert report["ok"] and broken is None
        return
    assert not report["ok"] and broken is not None
    assert (broken["event_id"], broken["fault"]) == (broken_at, fault)


def test_edited_data_is_caught(runtime: Runtime) -> None:
    append(runtime, 4)
    with transaction(runtime.sessions) as s:
        s.execute(update(_events).where(_events.c.id == 2).values(data={"i": 1, "tag": "x"}))
    broken = verify(runtime)["broken"]
    assert broken is not None and (broken["event_id"], broken["fault"]) == (2, "edited")
    assert "changed after it was written" in broken["detail"]


def test_swapped_rows_are_caught_as_reordered(runtime: Runtime) -> None:
    append(runtime, 5)
    with transaction(runtime.sessions) as s:
        _swap(s, 2, 4)
    broken = verify(runtime)["broken"]
    assert broken is not None and (broken["event_id"], broken["fault"]) == (2, "reordered")
    assert "event 2 links to event 3, not to event 1" in broken["detail"]


def _award(s: Session, owner: str) -> tuple[Project, Allocation]:
    """Site 'alpha', a project of `owner`'s and its allocation of 5 SU."""
    bf.site(s, "alpha")
    p = bf.project(s, owner)
    return p, allocations.grant(s, Grant(p.name, "*", 5000, NOW - YEAR, NOW + YEAR),
                                {"alpha"}, "committee", "award", NOW)


def test_the_ledger_is_checked_against_the_running_sums(runtime: Runtime,
                                                         make_user: MakeUser) -> None:
    owner = make_user().principal.user_id
    with transaction(runtime.sessions) as s:
        _, a = _award(s, owner)
    assert verify(runtime)["ledger_problems"] == []
    _tamper(runtime, f"UPDATE allocations SET used_milli = 7 WHERE id = {a.id}")
    report = verify(runtime)
    assert not report["ok"] and report["broken"] is None
    assert report["ledger_problems"] == [
        f"allocation {a.id}: running sums differ from its ledger: used 7 (ledger 0)"]
    _tamper(runtime, f"UPDATE allocations SET used_milli = 0 WHERE id = {a.id}",
            "UPDATE ledger_entries SET amount_milli = 4000 WHERE account = 'available'")
    problems = verify(runtime)["ledger_problems"]
    assert problems[0].startswith(f"allocation {a.id}: running sums differ")
    assert "sums to -1000, not 0" in problems[1]


def test_held_is_checked_against_the_open_liens(runtime: Runtime,
                                                make_user: MakeUser) -> None:
    # Liens are reservations outside the ledger: an edited lien shows as held that the
    # open liens do not add up to; an edited held as both that and a ledger difference.
    owner = make_user().principal.user_id
    with transaction(runtime.sessions) as s:
        p, a = _award(s, owner)
        bank.hold(s, bf.job(s, owner, p.id), Payer(p.id, p.name), "alpha", 1000, NOW, "alice")
    assert verify(runtime)["ledger_problems"] == []
    _tamper(runtime, "UPDATE liens SET amount_milli = 600")
    assert verify(runtime)["ledger_problems"] == [
        f"allocation {a.id}: running sums differ from its ledger: held 1000 (open liens 600)"]
    _tamper(runtime, "UPDATE liens SET amount_milli = 1000",
            f"UPDATE allocations SET held_milli = 1400 WHERE id = {a.id}")
    assert verify(runtime)["ledger_problems"] == [
        f"allocation {a.id}: running sums differ from its ledger: available + held 5400 "
        "(ledger 5000), held 1400 (open liens 1000)"]
