"""The ledger bound into the audit chain, on SQLite and PostgreSQL: SQL straight to the
tables that forges money consistently (legs and the allocation's sums edited together, a
transaction deleted or added whole, a leg moved to another transaction or account) leaves
the chain and the sums intact, and `verify` names the first transaction that differs from
the seal of the link that records it; an untouched ledger verifies clean, and links
written before the seal existed are counted as unbound and checked as before."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import timedelta

import pytest
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from gateway.accounting.charging import charge_for
from gateway.accounting.rates import Rate
from gateway.db.audit_models import AuditEvent
from gateway.db.bank_models import Allocation, LedgerEntry
from gateway.db.engine import transaction
from gateway.repositories.money import audit, bank_rows
from gateway.runtime import Runtime
from gateway.schemas.audit import AuditVerifyOut, LedgerDifferenceOut
from gateway.services.money import allocations, bank
from gateway.services.money import audit as audit_service
from gateway.services.money.allocations import Grant
from gateway.services.money.bank import Payer
from gateway.worker.periodic.audit_sequencer import take_in
from tests.conftest import MakeUser
from tests.services import bank_fixtures as bf
from tests.services.bank_fixtures import NOW, YEAR

THOUSAND_SU = 1_000_000  # milli-SU


@dataclass(frozen=True)
class Books:
    """A project's two allocations and the ids of what the ledger holds of them."""

    a: int  # granted 100 SU, paid a 1-SU charge
    b: int  # granted 50 SU, received a 10-SU transfer from a
    txns: dict[str, str]  # "transfer" and "charge" -> its txn
    deposit: str  # a's grant


def _books(runtime: Runtime, owner: str) -> Books:
    with transaction(runtime.sessions) as s:
        bf.site(s, "alpha")
        p = bf.project(s, owner)
        a = allocations.grant(s, Grant(p.name, "*", 100_000, NOW - YEAR, NOW + YEAR),
                              {"alpha"}, "committee", "award 2026", NOW)
        b = allocations.grant(s, Grant(p.name, "*", 50_000, NOW - YEAR, NOW + YEAR),
                              {"alpha"}, "committee", "second award", NOW)
        allocations.transfer(s, a.id, b.id, 10_000, "committee", "rebalance", NOW)
        job = bf.job(s, owner, p.id)
        bank.hold(s, job, Payer(p.id, p.name), "alpha", 5000, NOW, "alice")
        row, record = bf.usage_row(s, job, "alpha", "7", elapsed=1800, cores=2)
        charge = charge_for(record, Rate(core_hour_milli=1000), walltime_seconds=5 * 3600,
                            refund_cap_milli=0)
        bank.settle(s, job, [(row, charge)], NOW + timedelta(hours=1), "worker")
        a_id, b_id = a.id, b.id
    with runtime.sessions() as s:
        firsts = s.execute(select(LedgerEntry.kind, LedgerEntry.txn, LedgerEntry.allocation_id)
                           .order_by(LedgerEntry.id)).all()
    txns = {kind: txn for kind, txn, _ in firsts if kind != "deposit"}
    deposit = next(txn for kind, txn, allocation in firsts
                   if kind == "deposit" and allocation == a_id)
    return Books(a_id, b_id, txns, deposit)


def _verify(runtime: Runtime) -> AuditVerifyOut:
    take_in(runtime, every=0)
    with runtime.sessions() as session:
        return audit_service.verify(session, runtime.keys, NOW)


def _tamper(runtime: Runtime, *statements: str) -> None:
    with transaction(runtime.sessions) as s:
        for statement in statements:
            s.execute(text(statement))


def _link_of(runtime: Runtime, txn: str) -> int:
    with runtime.sessions() as s:
        ids = [e.id for e in s.scalars(select(AuditEvent).order_by(AuditEvent.id))
               if e.data.get("txn") == txn]
    assert len(ids) == 1
    return ids[0]


def _named(runtime: Runtime) -> LedgerDifferenceOut:
    """The first difference `verify` names, with the chain and the sums intact."""
    report = _verify(runtime)
    assert not report["ok"]
    assert report["broken"] is None, "the chain itself was not touched"
    first = report["ledger_seals"]["first"]
    assert first is not None
    return first


@pytest.fixture
def books(runtime: Runtime, make_user: MakeUser) -> Books:
    return _books(runtime, make_user().principal.user_id)


def test_an_untouched_ledger_verifies_clean(runtime: Runtime, books: Books) -> None:
    report = _verify(runtime)
    assert report["ok"], report
    # Two deposits, the transfer and the charge: each sealed and recomputed.
    assert report["ledger_seals"] == {"bound": 4, "unbound": 0, "differ": 0, "first": None}
    assert set(books.txns) == {"transfer", "charge"}


def test_a_grant_forged_with_its_allocations_sums_is_named(runtime: Runtime,
                                                           books: Books) -> None:
    # +1,000 SU: the grant's two legs and the allocation's sums edited together, so every
    # allocation matches its ledger and every transaction still balances.
    _tamper(runtime,
            f"UPDATE ledger_entries SET amount_milli = amount_milli + {THOUSAND_SU} "
            f"WHERE txn = '{books.deposit}' AND account = 'available'",
            f"UPDATE ledger_entries SET amount_milli = amount_milli - {THOUSAND_SU} "
            f"WHERE txn = '{books.deposit}' AND account = 'funding'",
            f"UPDATE allocations SET awarded_milli = awarded_milli + {THOUSAND_SU}, "
            f"available_milli = available_milli + {THOUSAND_SU} WHERE id = {books.a}")
    with runtime.sessions() as s:
        # What the PI is shown: the forged 1,089 SU.
        forged = s.get(Allocation, books.a)
        assert forged is not None and forged.available_milli == 1_089_000
    report = _verify(runtime)
    assert report["ledger_problems"] == [], "the sums were forged consistently"
    first = _named(runtime)
    assert (first["txn"], first["kind"], first["at"], first["event_id"]) == (
        books.deposit, "deposit", NOW, _link_of(runtime, books.deposit))
    assert "its legs no longer match their entry's seal" in first["detail"]
    assert f"available +1,100.000 SU of allocation {books.a}" in first["detail"]
    assert f"the entry recorded funding -100.000 SU of allocation {books.a}" in first["detail"]
    assert report["ledger_seals"]["differ"] == 1


def test_a_deleted_leg_is_named(runtime: Runtime, books: Books) -> None:
    charge = books.txns["charge"]
    _tamper(runtime, f"DELETE FROM ledger_entries WHERE txn = '{charge}' AND account = 'used'")
    first = _named(runtime)
    assert (first["txn"], first["kind"], first["event_id"]) == (
        charge, "charge", _link_of(runtime, charge))


def test_a_transaction_deleted_whole_with_the_sums_is_named(runtime: Runtime,
                                                            books: Books) -> None:
    # The charge undone, as if never made: its legs gone, the money back in `available`.
    charge = books.txns["charge"]
    with runtime.sessions() as s:
        used = s.get(Allocation, books.a)
        assert used is not None and used.used_milli == 1000
    _tamper(runtime, f"DELETE FROM ledger_entries WHERE txn = '{charge}'",
            "UPDATE allocations SET used_milli = 0, available_milli = available_milli + 1000 "
            f"WHERE id = {books.a}")
    assert _verify(runtime)["ledger_problems"] == []
    first = _named(runtime)
    assert (first["txn"], first["kind"]) == (charge, "charge")
    assert "the ledger has no leg of it: its legs were deleted" in first["detail"]


@pytest.mark.parametrize("named, move", [
    # Both legs of the transfer re-pointed to a's grant: every transaction still balances
    # and no sum changes. The grant comes first in the chain.
    ("deposit", ["UPDATE ledger_entries SET txn = '{deposit}' WHERE txn = '{transfer}'"]),
    # One leg to another transaction (both then unbalanced, as the sums check saw before).
    ("transfer", ["UPDATE ledger_entries SET txn = '{charge}' WHERE txn = '{transfer}' "
                  "AND amount_milli > 0"]),
    # To another account, the sums to match: the charge booked as if never used.
    ("charge", ["UPDATE ledger_entries SET account = 'available' WHERE txn = '{charge}' "
                "AND account = 'used'",
                "UPDATE allocations SET used_milli = used_milli - 1000, "
                "available_milli = available_milli + 1000 WHERE id = {a}"]),
    # To another allocation, the sums to match: the transfer's 10 SU kept by a.
    ("transfer", ["UPDATE ledger_entries SET allocation_id = {a} WHERE txn = '{transfer}' "
                  "AND amount_milli > 0",
                  "UPDATE allocations SET available_milli = available_milli + 10000 "
                  "WHERE id = {a}",
                  "UPDATE allocations SET available_milli = available_milli - 10000 "
                  "WHERE id = {b}"]),
])
def test_a_moved_leg_is_named(runtime: Runtime, books: Books, named: str,
                              move: list[str]) -> None:
    _tamper(runtime, *(m.format(a=books.a, b=books.b, deposit=books.deposit, **books.txns)
                       for m in move))
    txn = books.deposit if named == "deposit" else books.txns[named]
    first = _named(runtime)
    assert (first["txn"], first["kind"], first["event_id"]) == (
        txn, named, _link_of(runtime, txn))
    # Moved between transactions: both differ; else the one moved within.
    assert _verify(runtime)["ledger_seals"]["differ"] == (2 if "SET txn" in move[0] else 1)


def test_a_transaction_no_link_records_is_named(runtime: Runtime, books: Books) -> None:
    # 1,000 SU deposited by SQL: balanced legs and matching sums, but no link of its own.
    forged = str(uuid.uuid4())
    with transaction(runtime.sessions) as s:
        for account, amount in (("funding", -THOUSAND_SU), ("available", THOUSAND_SU)):
            s.add(LedgerEntry(txn=forged, at=NOW, allocation_id=books.b, account=account,
                              amount_milli=amount, kind="deposit", actor="committee"))
        s.execute(text(f"UPDATE allocations SET awarded_milli = awarded_milli + {THOUSAND_SU},"
                       f" available_milli = available_milli + {THOUSAND_SU} "
                       f"WHERE id = {books.b}"))
    assert _verify(runtime)["ledger_problems"] == []
    first = _named(runtime)
    assert (first["txn"], first["kind"], first["at"], first["event_id"]) == (
        forged, "deposit", NOW, None)
    assert "no entry of the audit log records it" in first["detail"]


def test_a_ledger_from_before_the_seal_verifies_as_unbound(runtime: Runtime,
                                                           books: Books) -> None:
    # As gridgate wrote them before the seal: a deposit, its link recording the legs but no
    # seal; and a lien's `held` legs (liens were ledger transactions then), recorded in
    # the link of the job's state change that took it (PostgreSQL's fast hold).
    with transaction(runtime.sessions) as s:
        _unsealed(s, books.b, "deposit", [("funding", -2000), ("available", 2000)])
        _unsealed(s, books.b, "lien", [("available", -500), ("held", 500)], carried=True)
    report = _verify(runtime)
    assert report["ok"], report
    assert report["ledger_seals"] == {"bound": 4, "unbound": 2, "differ": 0, "first": None}


def _unsealed(s: Session, allocation_id: int, kind: str, legs: list[tuple[str, int]],
              carried: bool = False) -> None:
    """A transaction and its link as written before the seal, the allocation's sums kept."""
    allocation = s.get(Allocation, allocation_id)
    assert allocation is not None
    txn = str(uuid.uuid4())
    bank_rows.stage_legs(s, [
        {"txn": txn, "at": NOW, "allocation_id": allocation_id, "account": account,
         "amount_milli": milli, "kind": kind, "job_id": None, "lien_id": None,
         "usage_id": None, "reason": "old", "actor": "committee"} for account, milli in legs])
    sums = {account: milli for account, milli in legs}
    allocation.awarded_milli -= sums.get("funding", 0)
    # The ledger's held is read with its available (the lien is long settled).
    allocation.available_milli += sums.get("available", 0) + sums.get("held", 0)
    data = {"txn": txn, "reason": "old", "lien": None, "usage": None,
            "legs": [{"allocation": allocation_id, "account": account, "amount_milli": milli}
                     for account, milli in legs]}
    if carried:
        audit.append(s, "job.state", "job:x", "alice",
                     {"from": None, "to": "ACCEPTED", "carried": {"kind": kind, **data}}, NOW)
    else:
        audit.append(s, kind, f"allocation:{allocation_id}", "committee", data, NOW)

