"""Settlement's rules beside the ledger (SQLite and PostgreSQL): which attempt of a job is
charged (the run, not a hedge's revoked sibling), when a job is ready, the estimate for a
record that never came, and charges taken only from the site's own durations."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from adapters.base import NativeState
from adapters.reasons import Reason
from adapters.usage import UsageRecord
from gateway.accounting.charging import charge_for
from gateway.accounting.rates import Rate
from gateway.db.bank_models import UsageRow
from gateway.db.engine import transaction
from gateway.db.models import Attempt, Job
from gateway.domain.states import AttemptState
from gateway.repositories.money import rate_cards
from gateway.runtime import Runtime
from gateway.services.money import allocations, bank, settlement
from gateway.services.money.allocations import Grant
from gateway.services.money.bank import Payer
from gateway.services.money.settlement import RunToSettle, ToSettle
from tests.conftest import MakeUser
from tests.services import bank_fixtures as bf
from tests.services.bank_fixtures import NOW, YEAR

RATE = Rate(1000)
HOUR = timedelta(hours=1)


def _run(native_id: str, state: AttemptState = AttemptState.COMPLETED,
         started: bool = True, ended: bool = True) -> RunToSettle:
    return RunToSettle("job", 1, native_id, "alice", NOW if started else None,
                       NOW + HOUR if ended else None, state)


def _record(native_id: str, **changes: object) -> UsageRecord:
    values: dict[str, object] = dict(
        native_id=native_id, run=0, state=NativeState.COMPLETED, reason=None, exit_code=0,
        started_at=NOW, ended_at=NOW + HOUR, elapsed=3600, cores=2, nodes=1,
        source="sacct", raw="x")
    values.update(changes)
    return UsageRecord(**values)  # type: ignore[arg-type]


def test_a_job_is_ready_when_every_run_that_ran_has_its_record() -> None:
    day = timedelta(days=1)
    assert settlement.ready([_run("1")], [_record("1")], NOW, NOW, day)
    assert not settlement.ready([_run("1")], [], NOW, NOW, day)
    # A hedge's sibling revoked before it started, a job deleted while pending: no record
    # is needed (Grid Engine keeps none).
    assert settlement.ready([_run("1"), _run("2", AttemptState.REVOKED, started=False)],
                            [_record("1")], NOW, NOW, day)
    assert settlement.ready([_run("3", AttemptState.CANCELLED, started=False)], [], NOW, NOW,
                            day)
    # Past the deadline, whatever came.
    assert settlement.ready([_run("1")], [], NOW, NOW + day, day)


def test_a_record_that_never_came_is_estimated_from_the_attempt() -> None:
    made = settlement.estimated_records(
        [_run("1"), _run("2", ended=False), _run("3", started=False), _run("4")],
        [_record("4")], cores=4, walltime_seconds=7200)
    assert [(r.native_id, r.elapsed, r.cores, r.source) for r in made] == [
        ("1", 3600, 4, "estimate"), ("2", 7200, 4, "estimate")]


@pytest.mark.parametrize(("changes", "amount", "refund"), [
    ({"state": NativeState.CANCELLED, "elapsed": 1800}, 1000, 0),  # cancelled running
    ({"state": NativeState.FAILED, "reason": Reason.PREEMPTED}, 2000, 500),
    ({"state": NativeState.FAILED, "reason": Reason.NODE_FAIL, "elapsed": 360}, 200,
     200),  # refunded whole: under the cap
    # The site's clock is two days ahead of the gateway's: only its elapsed time counts.
    ({"started_at": NOW + 2 * timedelta(days=1), "ended_at": NOW + 2 * timedelta(days=1)
      + HOUR}, 2000, 0),
])
def test_what_a_run_costs(changes: dict[str, object], amount: int, refund: int) -> None:
    charge = charge_for(_record("1", **changes), RATE, 7200, refund_cap_milli=500)
    assert (charge.amount_milli, charge.refund_milli) == (amount, refund)


def test_only_the_jobs_run_is_charged_not_its_revoked_sibling(
        runtime: Runtime, make_user: MakeUser) -> None:
    owner = make_user().principal.user_id
    with transaction(runtime.sessions) as s:
        bf.site(s, "alpha")
        bf.site(s, "beta")
        p = bf.project(s, owner)
        allocations.grant(s, Grant(p.name, "*", 10_000, NOW - YEAR, NOW + YEAR),
                          {"alpha", "beta"}, "committee", "award", NOW)
        job_id = bf.job(s, owner, p.id, "alpha")
        bank.hold(s, job_id, Payer(p.id, p.name), "alpha", 4000, NOW, "alice")
        won = Attempt(job_id=job_id, number=1, site_name="alpha", tag="t1", native_id="11",
                      state=AttemptState.COMPLETED, workdir="/w1", started_at=NOW)
        revoked = Attempt(job_id=job_id, number=2, site_name="beta", tag="t2",
                          native_id="22", state=AttemptState.REVOKED, workdir="/w2")
        s.add_all([won, revoked])
        s.flush()
        job = s.get(Job, job_id)
        assert job is not None
        job.state, job.ended_at, job.winner_attempt_id = "COMPLETED", NOW, won.id
    with runtime.sessions() as s:
        assert [r.native_id for r in settlement.finished_with_liens(s, "alpha", 10)] == ["11"]
        assert settlement.finished_with_liens(s, "beta", 10) == []


def test_an_estimated_charge_is_flagged_and_a_replay_changes_nothing(
        runtime: Runtime, make_user: MakeUser) -> None:
    owner = make_user().principal.user_id
    with transaction(runtime.sessions) as s:
        bf.site(s, "alpha")
        rate_cards.ensure_current(s, "alpha", RATE)
        p = bf.project(s, owner)
        alloc = allocations.grant(s, Grant(p.name, "*", 10_000, NOW - YEAR, NOW + YEAR),
                                  {"alpha"}, "committee", "award", NOW).id
        job_id = bf.job(s, owner, p.id, "alpha")
        bank.hold(s, job_id, Payer(p.id, p.name), "alpha", 4000, NOW, "alice")
    made = settlement.estimated_records([_run("7")], [], cores=1, walltime_seconds=7200)
    with runtime.sessions() as s:
        terms = settlement.terms(s, [job_id])[job_id]
    for _ in range(2):
        with transaction(runtime.sessions) as s:
            settlement.settle_jobs(s, "alpha", [ToSettle(job_id, made, terms)], NOW, 0)
    with runtime.sessions() as s:
        [row] = s.scalars(select(UsageRow).where(UsageRow.job_id == job_id)).all()
        assert row.estimated and row.charged_milli == 1000
        assert bf.allocation(s, alloc).used_milli == 1000
        bf.check_invariants(s)
