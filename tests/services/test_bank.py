"""The bank on SQLite and PostgreSQL: grants, liens, charges, refunds and releases keep
the ledger balanced, a replayed usage record changes nothing, and nothing goes below an
allocation's credit limit (a property test over random sequences)."""

from __future__ import annotations

import contextlib
import uuid
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.orm import Session

from adapters.base import NativeState
from adapters.reasons import Reason
from adapters.usage import UsageRecord
from gateway.accounting.charging import charge_for
from gateway.accounting.rates import Rate
from gateway.db.bank_models import UsageRow
from gateway.db.engine import transaction
from gateway.domain.errors import Invalid
from gateway.runtime import Runtime
from gateway.services.money import allocations, bank
from gateway.services.money.allocations import Grant
from gateway.services.money.bank import InsufficientFunds, Payer
from tests.conftest import MakeUser
from tests.services import bank_fixtures as bf
from tests.services.bank_fixtures import NOW, YEAR

RATE = Rate(core_hour_milli=1000)  # 1 SU per core-hour
CAP = 100_000


def _setup(runtime: Runtime, make_user: MakeUser, su: int = 100, pool: str = "*",
           credit: int = 0) -> tuple[str, Payer, int]:
    owner = make_user().principal.user_id
    with transaction(runtime.sessions) as s:
        bf.site(s, "alpha")
        p = bf.project(s, owner)
        a = allocations.grant(s, Grant(p.name, pool, su * 1000, NOW - YEAR, NOW + YEAR,
                                       credit), {"alpha"}, "committee", "award 2026", NOW)
        return owner, Payer(p.id, p.name), a.id


def test_lien_then_charge_then_release(runtime: Runtime, make_user: MakeUser) -> None:
    owner, payer, alloc = _setup(runtime, make_user)
    with transaction(runtime.sessions) as s:
        job = bf.job(s, owner, payer.project_id)
        liens = bank.hold(s, job, payer, "alpha", 10_000, NOW, "alice")
        assert [lien.amount_milli for lien in liens] == [10_000]
        a = bf.allocation(s, alloc)
        assert (a.available_milli, a.held_milli) == (90_000, 10_000)
        row, record = bf.usage_row(s, job, "alpha", "7", elapsed=1800, cores=2)
        charge = charge_for(record, RATE, walltime_seconds=5 * 3600, refund_cap_milli=CAP)
        done = bank.settle(s, job, [(row, charge)], NOW, "worker")
        assert (done.charged_milli, done.released_milli, done.short_milli) == (1000, 9000, 0)
        a = bf.allocation(s, alloc)
        assert (a.available_milli, a.held_milli, a.used_milli) == (99_000, 0, 1000)
        bf.check_invariants(s)
        # The same record again (a replay after a crash) changes nothing.
        again = bank.settle(s, job, [(row, charge)], NOW, "worker")
        assert again.charged_milli == 0
        assert bf.allocation(s, alloc).used_milli == 1000
        bf.check_invariants(s)


def test_refused_when_the_quote_exceeds_what_is_available(
        runtime: Runtime, make_user: MakeUser) -> None:
    owner, payer, alloc = _setup(runtime, make_user, su=5)
    with transaction(runtime.sessions) as s:
        job = bf.job(s, owner, payer.project_id)
        with pytest.raises(InsufficientFunds) as refused:
            bank.hold(s, job, payer, "alpha", 6000, NOW, "alice")
        assert "would cost 6.000 SU" in refused.value.detail
        assert "5.000 SU available" in refused.value.detail
        assert refused.value.extra["available_su"] == "5.000"
        assert bf.allocation(s, alloc).held_milli == 0


def test_a_site_pool_pays_only_there_and_earliest_ending_is_drawn_first(
        runtime: Runtime, make_user: MakeUser) -> None:
    owner, payer, federation = _setup(runtime, make_user, su=10)
    with transaction(runtime.sessions) as s:
        bf.site(s, "beta")
        soon = allocations.grant(s, Grant(payer.project_name, "alpha", 4000, NOW - YEAR,
                                          NOW + timedelta(days=30)), {"alpha", "beta"},
                                 "committee", "small, ends soon", NOW)
        job = bf.job(s, owner, payer.project_id)
        liens = bank.hold(s, job, payer, "alpha", 6000, NOW, "alice")
        assert [(lien.allocation_id, lien.amount_milli) for lien in liens] == [
            (soon.id, 4000), (federation, 2000)]
        other = bf.job(s, owner, payer.project_id)
        # At beta only the federation-wide allocation pays: 8 SU left there.
        with pytest.raises(InsufficientFunds):
            bank.hold(s, other, payer, "beta", 8001, NOW, "alice")
        bank.hold(s, other, payer, "beta", 8000, NOW, "alice")
        bf.check_invariants(s)


def test_an_expired_or_suspended_allocation_takes_no_new_lien(
        runtime: Runtime, make_user: MakeUser) -> None:
    owner, payer, alloc = _setup(runtime, make_user)
    with transaction(runtime.sessions) as s:
        job = bf.job(s, owner, payer.project_id)
        with pytest.raises(InsufficientFunds):
            bank.hold(s, job, payer, "alpha", 1000, NOW + 2 * YEAR, "alice")
        allocations.set_status(s, alloc, "suspended", "committee", "test", NOW)
        with pytest.raises(InsufficientFunds):
            bank.hold(s, job, payer, "alpha", 1000, NOW, "alice")


def test_an_allocation_ending_mid_job_still_pays_from_its_lien(
        runtime: Runtime, make_user: MakeUser) -> None:
    owner, payer, _ = _setup(runtime, make_user, su=1)
    with transaction(runtime.sessions) as s:
        ending = allocations.grant(s, Grant(payer.project_name, "alpha", 10_000, NOW - YEAR,
                                            NOW + timedelta(minutes=30)), {"alpha"},
                                   "committee", "ends in half an hour", NOW)
        job = bf.job(s, owner, payer.project_id)
        [lien] = bank.hold(s, job, payer, "alpha", 2000, NOW, "alice")
        assert lien.allocation_id == ending.id
        # The job ends after the allocation did: the charge comes from the lien on it.
        row, record = bf.usage_row(s, job, "alpha", "8", elapsed=3600, cores=1)
        charge = charge_for(record, RATE, walltime_seconds=3600, refund_cap_milli=CAP)
        bank.settle(s, job, [(row, charge)], NOW + timedelta(hours=1), "worker")
        a = bf.allocation(s, ending.id)
        assert (a.used_milli, a.held_milli, a.available_milli) == (1000, 0, 9000)
        bf.check_invariants(s)


def test_site_caused_end_is_refunded_up_to_the_cap(runtime: Runtime,
                                                   make_user: MakeUser) -> None:
    owner, payer, alloc = _setup(runtime, make_user)
    with transaction(runtime.sessions) as s:
        job = bf.job(s, owner, payer.project_id)
        bank.hold(s, job, payer, "alpha", 8000, NOW, "alice")
        row, record = bf.usage_row(s, job, "alpha", "9", elapsed=3600, cores=4,
                                   reason=Reason.NODE_FAIL)
        charge = charge_for(record, RATE, walltime_seconds=7200, refund_cap_milli=1500)
        assert (charge.amount_milli, charge.refund_milli) == (4000, 1500)
        done = bank.settle(s, job, [(row, charge)], NOW, "worker")
        assert (done.charged_milli, done.refunded_milli) == (4000, 1500)
        assert bf.allocation(s, alloc).used_milli == 2500
        bf.check_invariants(s)


def test_a_charge_past_the_lien_stops_at_the_credit_limit(runtime: Runtime,
                                                          make_user: MakeUser) -> None:
    # A requeued job's second run was not in the lien: it is drawn from what is left.
    owner, payer, alloc = _setup(runtime, make_user, su=3, credit=1000)
    with transaction(runtime.sessions) as s:
        job = bf.job(s, owner, payer.project_id)
        bank.hold(s, job, payer, "alpha", 2000, NOW, "alice")
        first, r1 = bf.usage_row(s, job, "alpha", "10", run=0, elapsed=3600, cores=2)
        second, r2 = bf.usage_row(s, job, "alpha", "10", run=1, elapsed=3600, cores=2)
        charges = [(first, charge_for(r1, RATE, 3600, CAP)),
                   (second, charge_for(r2, RATE, 3600, CAP))]
        done = bank.settle(s, job, charges, NOW, "worker")
        # 4 SU due; 2 from the lien, 1 available, 1 of credit: all paid.
        assert (done.charged_milli, done.short_milli) == (4000, 0)
        assert bf.allocation(s, alloc).available_milli == -1000
        bf.check_invariants(s)
        third, r3 = bf.usage_row(s, job, "alpha", "10", run=2, elapsed=3600, cores=2)
        late = bank.settle(s, job, [(third, charge_for(r3, RATE, 3600, CAP))], NOW, "worker")
        assert (late.charged_milli, late.short_milli) == (0, 2000)
        assert "could not be charged" in (third.rule or "")
        bf.check_invariants(s)


def test_release_returns_a_lien_whole(runtime: Runtime, make_user: MakeUser) -> None:
    owner, payer, alloc = _setup(runtime, make_user)
    with transaction(runtime.sessions) as s:
        job = bf.job(s, owner, payer.project_id)
        bank.hold(s, job, payer, "alpha", 7000, NOW, "alice")
        assert bank.release(s, job, NOW, "alice", "cancelled while pending") == 7000
        assert bank.release(s, job, NOW, "alice", "twice") == 0
        a = bf.allocation(s, alloc)
        assert (a.available_milli, a.held_milli, a.used_milli) == (100_000, 0, 0)
        bf.check_invariants(s)


def test_transfers_and_adjustments_keep_the_books(runtime: Runtime,
                                                  make_user: MakeUser) -> None:
    _, payer, alloc = _setup(runtime, make_user, su=10)
    with transaction(runtime.sessions) as s:
        other = allocations.grant(s, Grant(payer.project_name, "alpha", 1000, NOW - YEAR,
                                           NOW + YEAR), {"alpha"}, "committee", "b", NOW)
        allocations.transfer(s, alloc, other.id, 4000, "committee", "rebalance", NOW)
        allocations.adjust(s, other.id, -2000, "committee", "over-award corrected", NOW)
        with pytest.raises(Exception, match="spendable"):
            allocations.adjust(s, other.id, -4000, "committee", "too much", NOW)
        assert bf.allocation(s, other.id).available_milli == 3000
        assert bf.allocation(s, alloc).available_milli == 6000
        bf.check_invariants(s)


# -- property: random sequences ------------------------------------------------------

OPS = st.lists(st.tuples(st.sampled_from(["deposit", "hold", "settle", "release", "replay",
                                          "adjust"]),
                         st.integers(min_value=1, max_value=4000),
                         st.integers(min_value=0, max_value=3)),
               min_size=1, max_size=25)


@hsettings(max_examples=15, deadline=None,
           suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_random_sequences_keep_every_invariant(runtime: Runtime, make_user: MakeUser,
                                               ops: list[tuple[str, int, int]]) -> None:
    owner, payer, alloc = _setup(runtime, make_user, su=5, credit=500)
    jobs: list[str] = []
    for op, amount, pick in ops:
        with transaction(runtime.sessions) as s:
            if op in ("deposit", "adjust"):
                _adjust(s, alloc, amount if op == "deposit" else -amount)
            elif op == "hold":
                job = bf.job(s, owner, payer.project_id)
                with contextlib.suppress(InsufficientFunds):
                    bank.hold(s, job, payer, "alpha", amount, NOW, "alice")
                jobs.append(job)
            elif op == "settle" and jobs:
                _settle_new_run(s, jobs[pick % len(jobs)], amount, pick)
            elif op == "replay" and jobs:
                _replay(s, jobs[pick % len(jobs)], alloc)
            elif op == "release" and jobs:
                bank.release(s, jobs[pick % len(jobs)], NOW, "alice", "cancelled")
        with transaction(runtime.sessions) as s:
            bf.check_invariants(s)


def _adjust(s: Session, alloc: int, amount: int) -> None:
    try:
        allocations.adjust(s, alloc, amount, "committee", "top up or take back", NOW)
    except Invalid as exc:  # more than is spendable: refused, nothing moves
        assert "spendable" in exc.detail


def _settle_new_run(s: Session, job: str, seconds: int, pick: int) -> None:
    row, record = bf.usage_row(s, job, "alpha", uuid.uuid4().hex[:12], elapsed=seconds,
                               cores=1 + pick, reason=Reason.NODE_FAIL if pick == 3 else None)
    bank.settle(s, job, [(row, charge_for(record, RATE, 3600, 500))], NOW, "w")


def _replay(s: Session, job: str, alloc: int) -> None:
    """Every record of the job settled again: nothing changes."""
    rows = list(s.scalars(select(UsageRow).where(UsageRow.job_id == job)))
    before = bf.allocation(s, alloc).used_milli
    bank.settle(s, job, [(r, charge_for(_record_of(r), RATE, 3600, 500)) for r in rows],
                NOW, "w")
    assert bf.allocation(s, alloc).used_milli == before


def _record_of(row: UsageRow) -> UsageRecord:
    return UsageRecord(row.native_id, row.run, NativeState(row.state), None, row.exit_code,
                       row.started_at, row.ended_at, row.elapsed, row.cores,
                       row.nodes, row.source, row.raw)


@pytest.mark.parametrize(("changes", "rule"), [
    ({"reason": Reason.BOOT_FAIL, "elapsed": 2}, "failed at start (BOOT_FAIL)"),
    ({"reason": "failed at start: failed 26: opening input/output file"},
     "failed at start (failed at start: failed 26"),
    ({"started_at": None, "elapsed": 0}, "never ran"),
    ({"elapsed": 0}, "never ran"),
])
def test_runs_that_never_got_going_cost_nothing(changes: dict[str, object], rule: str) -> None:
    record = UsageRecord(**{**BASE_RECORD, **changes})  # type: ignore[arg-type]
    charge = charge_for(record, RATE, 3600, CAP)
    assert (charge.amount_milli, charge.refund_milli) == (0, 0)
    assert charge.rule.startswith(rule)


def test_a_run_past_its_walltime_is_charged_the_walltime() -> None:
    record = UsageRecord(**{**BASE_RECORD, "elapsed": 4000, "cores": 3})  # type: ignore[arg-type]
    charge = charge_for(record, RATE, 3600, CAP)
    assert charge.amount_milli == 3000
    assert "charged up to the walltime asked for" in charge.rule


BASE_RECORD: dict[str, object] = dict(
    native_id="1", run=0, state=NativeState.FAILED, reason=None, exit_code=1, started_at=NOW,
    ended_at=NOW, elapsed=60, cores=1, nodes=1, source="sacct", raw="1|FAILED")
