"""The audit log on SQLite and PostgreSQL: appends ride the caller's transaction (a
rollback leaves no entry) and take no lock another commit waits for; the sequencer takes
committed entries into the Merkle tree and signs each head, all or nothing; concurrent
appenders and sequencers leave one tree; rows tampered with by SQL straight to the tables
(entries edited, deleted, moved, added, the tail cut, entries and tree rebuilt together,
a head re-rooted) are named; so are ledger rows and running sums that no longer agree."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session

from gateway.accounting.charging import charge_for
from gateway.accounting.rates import Rate
from gateway.db.audit_models import AuditEvent, AuditTreeHead, AuditTreeNode
from gateway.db.bank_models import Allocation
from gateway.db.engine import transaction
from gateway.db.models import Project
from gateway.repositories.money import audit, audit_tree
from gateway.runtime import Runtime
from gateway.schemas.audit import AuditVerifyOut
from gateway.services import projects
from gateway.services.money import allocations, bank
from gateway.services.money import audit as audit_service
from gateway.services.money.allocations import Grant
from gateway.services.money.audit_tree import signed_by, signer
from gateway.services.money.bank import Payer
from gateway.worker.periodic.audit_sequencer import take_in
from tests.conftest import MakeUser
from tests.services import bank_fixtures as bf
from tests.services.bank_fixtures import NOW, YEAR

_events = AuditEvent.__table__
ZEROS = "0" * 64


def verify(runtime: Runtime) -> AuditVerifyOut:
    with runtime.sessions() as session:
        return audit_service.verify(session, runtime.keys, NOW)


def seal(runtime: Runtime) -> int:
    """Take every waiting entry in; the tree's size."""
    take_in(runtime, every=0)
    with runtime.sessions() as s:
        assert s.scalar(select(func.count()).where(_events.c.seq.is_(None))) == 0
        head = audit_tree.latest_head(s.connection())
    return 0 if head is None else head.size


def append(runtime: Runtime, n: int, tag: str = "e", per: int = 1) -> None:
    """n transactions of `per` entries each."""
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


def test_an_intact_log_verifies(runtime: Runtime) -> None:
    report = verify(runtime)
    assert report["ok"] and report["head"] is None and report["pending"] == 0
    append(runtime, 5)
    report = verify(runtime)
    assert (report["ok"], report["events"], report["pending"]) == (True, 0, 5)
    assert report["oldest_pending_at"] == NOW
    assert seal(runtime) == 5
    report = verify(runtime)
    assert (report["ok"], report["events"], report["broken"], report["pending"]) == (
        True, 5, None, 0)
    assert report["head"] is not None and report["head"]["size"] == 5
    with runtime.sessions() as s:
        head = audit_tree.latest_head(s.connection())
    assert head is not None and signed_by(runtime.keys, head)


def test_a_rolled_back_change_leaves_no_entry(runtime: Runtime) -> None:
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
    assert seal(runtime) == 3 and verify(runtime)["ok"]


def test_the_bank_postings_are_logged(runtime: Runtime, make_user: MakeUser) -> None:
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
    assert seal(runtime) == 7 and verify(runtime)["ok"]


def test_a_big_batch_is_logged_like_small_ones(runtime: Runtime) -> None:
    append(runtime, 1, "a", per=audit.ONE_STATEMENT_MAX + 5)
    append(runtime, 2, "b", per=3)
    assert seal(runtime) == audit.ONE_STATEMENT_MAX + 11
    report = verify(runtime)
    assert (report["ok"], report["events"]) == (True, audit.ONE_STATEMENT_MAX + 11)
    with runtime.sessions() as s:
        subjects = list(s.scalars(select(AuditEvent.subject).order_by(AuditEvent.seq)))
    assert subjects[:2] == ["thing:a0.0", "thing:a0.1"] and subjects[-1] == "thing:b1.2"


def test_project_and_membership_changes_are_logged(runtime: Runtime,
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
        entries = audit.of_subject(s.connection(), f"project:{p.id}")
    assert [(e.kind, e.data.get("from"), e.data.get("to")) for e in entries] == [
        ("project.create", None, None), ("project.member.add", None, "member"),
        ("project.member.role", "member", "manager"),
        ("project.member.remove", "manager", None)]
    assert {e.actor for e in entries} == {admin.display}
    seal(runtime)
    assert verify(runtime)["ok"]


def test_concurrent_appenders_and_sequencers_leave_one_tree(runtime: Runtime) -> None:
    # Transactions of one, two and three entries (one INSERT) and of 70 (past
    # ONE_STATEMENT_MAX: COPY on PostgreSQL) interleave with two sequencers at work.
    sizes = [1, 2, 3, 1, 2, 70]
    appenders = [threading.Thread(target=append, args=(runtime, 10, f"t{n}-", size))
                 for n, size in enumerate(sizes)]
    done = threading.Event()

    def sequence() -> None:
        while not done.is_set():
            take_in(runtime, every=0)

    sequencers = [threading.Thread(target=sequence) for _ in range(2)]
    for t in appenders + sequencers:
        t.start()
    for t in appenders:
        t.join()
    done.set()
    for t in sequencers:
        t.join()
    total = 10 * sum(sizes)
    assert seal(runtime) == total
    report = verify(runtime)
    assert (report["ok"], report["events"]) == (True, total)
    with runtime.sessions() as s:
        seqs = sorted(s.scalars(select(AuditEvent.seq)))
        heads = s.scalar(select(func.count()).select_from(AuditTreeHead))
    assert seqs == list(range(total))
    assert heads is not None and heads >= 1


def test_an_append_waits_for_no_other_commit(runtime: Runtime) -> None:
    """A transaction that has written its entries and not committed, and a sequencer in
    the middle of its step, hold nothing another commit of entries waits for (the chain
    it replaces made every commit wait on one row)."""
    if runtime.engine.dialect.name != "postgresql":
        pytest.skip("SQLite has one writer at a time, whatever the log does")
    append(runtime, 3)
    with transaction(runtime.sessions) as open_writer, \
            transaction(runtime.sessions) as sequencer:
        audit.write(open_writer.connection(), [audit.NewAuditEvent(NOW, "test", "thing:open",
                                                                   "tester", {})])
        audit_tree.integrate(sequencer.connection(), NOW, signer(runtime.keys), every=0)
        other = threading.Thread(target=append, args=(runtime, 2, "other"))
        other.start()
        other.join(timeout=120)  # would wait forever on a shared lock
        assert not other.is_alive()
    assert seal(runtime) == 6 and verify(runtime)["ok"]


def test_a_sequencer_step_is_all_or_nothing(runtime: Runtime) -> None:
    append(runtime, 3)
    seal(runtime)
    append(runtime, 2, "late")

    def failing(size: int, root: str, at: object) -> str:
        raise RuntimeError("the process dies before the head is signed")

    with pytest.raises(RuntimeError), transaction(runtime.sessions) as s:
        audit_tree.integrate(s.connection(), NOW, failing, every=0)
    with runtime.sessions() as s:
        assert s.scalar(select(func.count()).where(_events.c.seq.is_(None))) == 2
        assert s.scalar(select(func.count()).select_from(AuditTreeNode)) == 4  # 3 leaves, 1 pair
    assert seal(runtime) == 5 and verify(runtime)["ok"]


def test_a_damaged_tree_is_not_grown(runtime: Runtime, caplog: pytest.LogCaptureFixture
                                     ) -> None:
    append(runtime, 3)
    seal(runtime)
    _tamper(runtime, f"UPDATE audit_tree_nodes SET hash = '{ZEROS}' "
                     "WHERE level = 1 AND index = 0")
    append(runtime, 1, "late")
    assert take_in(runtime, every=0) is None
    assert "the audit log's tree is not grown" in caplog.text
    report = verify(runtime)
    assert report["pending"] == 1 and not report["ok"] and report["broken"] is not None
    assert report["broken"]["fault"] == "damaged"
    assert "leaves 0 to 1" in report["broken"]["detail"]


def _tamper(runtime: Runtime, *statements: str) -> None:
    with transaction(runtime.sessions) as s:
        for statement in statements:
            s.execute(text(statement.replace("index", '"index"')))


@pytest.mark.parametrize("tamper, broken_at, fault", [
    (["UPDATE audit_events SET actor = 'mallory' WHERE id = 3"], 3, "edited"),
    (["UPDATE audit_events SET at = at WHERE id = 3"], None, None),  # a no-op is no tamper
    (["UPDATE audit_events SET kind = 'charge' WHERE id = 5"], 5, "edited"),
    (["DELETE FROM audit_events WHERE id = 3"], 4, "deleted"),
    (["DELETE FROM audit_events WHERE id = 1"], 2, "deleted"),
    (["DELETE FROM audit_events WHERE id = 6"], None, "truncated"),
    (["UPDATE audit_events SET seq = seq + 100 WHERE id = 2",
      "UPDATE audit_events SET seq = 1 WHERE id = 4",
      "UPDATE audit_events SET seq = 3 WHERE id = 2"], 4, "reordered"),
    # An entry and its leaf hash changed together: the tree no longer gives the signed root.
    (["UPDATE audit_events SET actor = 'mallory' WHERE id = 3",
      "UPDATE audit_tree_nodes SET hash = (SELECT hash FROM audit_tree_nodes WHERE level = 0 "
      "AND index = 0) WHERE level = 0 AND index = 2",
      "UPDATE audit_events SET actor = 'tester', kind = 'test', subject = 'thing:e0', "
      "data = (SELECT data FROM audit_events WHERE id = 1), at = (SELECT at FROM "
      "audit_events WHERE id = 1) WHERE id = 3"], None, "rewritten"),
    (["INSERT INTO audit_events (at, kind, subject, actor, data, seq) SELECT at, kind, "
      "subject, actor, data, 6 FROM audit_events WHERE id = 1",
      "INSERT INTO audit_tree_nodes (level, index, hash) SELECT 0, 6, hash FROM "
      "audit_tree_nodes WHERE level = 0 AND index = 0"], None, "added"),
    ([f"UPDATE audit_tree_heads SET root = '{ZEROS}'"], None, "forged_head"),
])
def test_tampering_is_named(runtime: Runtime, tamper: list[str], broken_at: int | None,
                            fault: str | None) -> None:
    append(runtime, 6)
    assert seal(runtime) == 6
    _tamper(runtime, *tamper)
    report = verify(runtime)
    broken = report["broken"]
    if fault is None:
        assert report["ok"] and broken is None
        return
    assert not report["ok"] and broken is not None, report
    assert (broken["event_id"], broken["fault"]) == (broken_at, fault), broken


def test_edited_data_is_caught(runtime: Runtime) -> None:
    append(runtime, 4)
    seal(runtime)
    with transaction(runtime.sessions) as s:
        s.execute(update(_events).where(_events.c.id == 2).values(data={"i": 1, "tag": "x"}))
    broken = verify(runtime)["broken"]
    assert broken is not None and (broken["event_id"], broken["fault"]) == (2, "edited")
    assert "changed after it entered the log" in broken["detail"]


def test_every_head_is_checked_not_only_the_newest(runtime: Runtime) -> None:
    append(runtime, 3)
    seal(runtime)
    append(runtime, 2, "more")
    seal(runtime)
    _tamper(runtime, "UPDATE audit_tree_heads SET signature = (SELECT signature FROM "
                     "audit_tree_heads WHERE size = 5) WHERE size = 3")
    broken = verify(runtime)["broken"]
    assert broken is not None and broken["fault"] == "forged_head"
    assert "size 3" in broken["detail"]


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
