"""Committee reports on SQLite and PostgreSQL, over a bank history made by the bank's own
services (tests/services/report_fixtures.py): balances and burn rate as of any time, usage
by site/user/project/size with the rate basis, waits, refunds and adjustments, a user's
sacct-like list, and who may read what (gateway.auth.project_access)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import pytest

from gateway.accounting import report_math as rm
from gateway.db.engine import transaction
from gateway.domain.errors import Invalid, NotFound
from gateway.domain.principal import Principal
from gateway.repositories.money import reports as repo
from gateway.repositories.money.reports import Scope
from gateway.runtime import Runtime
from gateway.services.money import reports
from gateway.services.money.reports import Period
from tests.conftest import MakeUser
from tests.services import report_fixtures as rf
from tests.services.bank_fixtures import NOW
from tests.services.report_fixtures import DAY0, World


@dataclass
class People:
    admin: Principal
    auditor: Principal
    pi: Principal
    member: Principal
    other: Principal


@pytest.fixture
def world(runtime: Runtime, make_user: MakeUser) -> tuple[World, People]:
    people = People(*(make_user(roles=roles).principal for roles in (
        ("admin",), ("auditor",), ("researcher",), ("researcher",), ("researcher",))))
    with transaction(runtime.sessions) as s:
        made = rf.build(s, people.pi.user_id, people.member.user_id, people.other.user_id)
    return made, people


def _alloc(runtime: Runtime, who: Principal, project: str | None, as_of=None,  # type: ignore[no-untyped-def]
           window_days: int = 30):
    with transaction(runtime.sessions) as s:
        return reports.allocation_report(s, who, project, Period(as_of=as_of), window_days,
                                         NOW)


def test_allocation_balances_now(runtime: Runtime, world: tuple[World, People]) -> None:
    w, p = world
    report = _alloc(runtime, p.pi, w.astro)
    [row] = report["allocations"]
    # 100 awarded + 10 adjusted; used 2 + 8 + 16 - 16 refunded; j4's lien of 5 held.
    assert (row["awarded_su"], row["used_su"], row["held_su"], row["remaining_su"]) == (
        110.0, 10.0, 5.0, 95.0)
    assert row["status"] == "active" and row["pool"] == "*"
    # In the last 30 days: j2's 8 SU (j3 was refunded whole).
    burn = rm.burn_per_day_milli(8000, timedelta(days=30))
    assert row["burn_su_per_day"] == burn / 1000 == 0.266
    assert row["exhausts_at"] == rm.exhaustion(95_000, burn, NOW, row["ends_at"]).at
    assert row["exhausts_before_end"] is False
    assert report["as_of"] == NOW and "ledger" in report["basis"]


def test_allocation_balances_as_of_the_past(runtime: Runtime,
                                            world: tuple[World, People]) -> None:
    w, p = world
    settled_j1 = DAY0 + timedelta(days=1)
    # While j1 waited: its lien (2 SU + 1 SU margin) held, nothing used.
    [before] = _alloc(runtime, p.admin, w.astro, settled_j1 - timedelta(seconds=1))[
        "allocations"]
    assert (before["awarded_su"], before["used_su"], before["held_su"],
            before["remaining_su"]) == (100.0, 0.0, 3.0, 97.0)
    [after] = _alloc(runtime, p.admin, w.astro, settled_j1)["allocations"]
    assert (after["used_su"], after["held_su"], after["remaining_su"]) == (2.0, 0.0, 98.0)
    # Before the grant the allocation did not exist.
    assert _alloc(runtime, p.admin, w.astro, DAY0 - timedelta(days=1))["allocations"] == []
    # Burned 2 SU in a 2-day window: 1 SU a day, 98 SU left: exhausted in 98 days, a
    # day before the allocation ends (DAY0 + 100 days).
    [burning] = _alloc(runtime, p.admin, w.astro, settled_j1, window_days=2)["allocations"]
    assert burning["burn_su_per_day"] == 1.0
    assert burning["exhausts_at"] == settled_j1 + timedelta(days=98)
    assert burning["exhausts_before_end"] is True


def test_allocations_seen_by_each_role(runtime: Runtime, world: tuple[World, People]) -> None:
    w, p = world
    everyone = {r["project"] for r in _alloc(runtime, p.auditor, None)["allocations"]}
    assert everyone == {w.astro, w.geo}
    # A member reads the balances of the projects they belong to, nothing else.
    assert [r["project"] for r in _alloc(runtime, p.member, None)["allocations"]] == [w.astro]
    with pytest.raises(NotFound):
        _alloc(runtime, p.other, w.astro)
    with pytest.raises(Invalid, match="future"):
        _alloc(runtime, p.admin, w.astro, NOW + timedelta(days=1))
    with pytest.raises(Invalid, match="window_days"):
        _alloc(runtime, p.admin, w.astro, window_days=0)


def _usage(runtime: Runtime, who: Principal, by: str, project: str | None = None,
           **period: object) -> dict[str, object]:
    with transaction(runtime.sessions) as s:
        report = reports.usage_report(s, who, by, project, Period(**period),  # type: ignore[arg-type]
                                      NOW)
    return dict(report)


def _rows(report: dict[str, object]) -> dict[str, tuple[object, ...]]:
    return {r["key"]: (r["runs"], r["jobs"], r["core_hours"], r["charged_su"],  # type: ignore[attr-defined]
                       r["refunded_su"], r["net_su"]) for r in report["rows"]}  # type: ignore[attr-defined]


def test_usage_by_site_with_the_rate_basis(runtime: Runtime,
                                           world: tuple[World, People]) -> None:
    _, p = world
    report = _usage(runtime, p.admin, "site")
    assert _rows(report) == {
        "alpha": (3, 3, 20.0, 20.0, 16.0, 4.0),  # j1 2, j3 16 (refunded), geo's j5 2
        "beta": (1, 1, 4.0, 8.0, 0.0, 8.0),      # j2: 4 core-hours at 2 SU each
    }
    basis = {r["key"]: (r["rate_card_version"], r["su_per_core_hour"])
             for r in report["rows"]}  # type: ignore[attr-defined]
    assert basis == {"alpha": (1, 1.0), "beta": (1, 2.0)}
    total = report["total"]
    assert (total["runs"], total["jobs"], total["core_hours"], total["net_su"]) == (  # type: ignore[index]
        4, 4, 24.0, 12.0)
    assert "SU per core-hour" in str(report["basis"])


def test_usage_as_of_and_in_a_period(runtime: Runtime, world: tuple[World, People]) -> None:
    _, p = world
    # Three days ago j3's record had not come (j5's came at that very moment).
    past = _rows(_usage(runtime, p.admin, "site", as_of=NOW - timedelta(days=3)))
    assert past == {"alpha": (2, 2, 4.0, 4.0, 0.0, 4.0), "beta": (1, 1, 4.0, 8.0, 0.0, 8.0)}
    # Runs that ended in the last 4 days, by the sites' own clocks: j3 and j5.
    recent = _rows(_usage(runtime, p.admin, "site", since=NOW - timedelta(days=4)))
    assert recent == {"alpha": (2, 2, 18.0, 18.0, 16.0, 2.0)}
    early = _rows(_usage(runtime, p.admin, "site", until=NOW - timedelta(days=30)))
    assert early == {"alpha": (1, 1, 2.0, 2.0, 0.0, 2.0)}


def test_usage_by_user_project_and_size(runtime: Runtime,
                                        world: tuple[World, People]) -> None:
    w, p = world
    by_user = _rows(_usage(runtime, p.pi, "user", w.astro))
    assert by_user == {p.pi.username: (1, 1, 2.0, 2.0, 0.0, 2.0),
                       p.member.username: (2, 2, 20.0, 24.0, 16.0, 8.0)}
    # A member sees only their own usage, with or without naming the project.
    mine = {p.member.username: (2, 2, 20.0, 24.0, 16.0, 8.0)}
    assert _rows(_usage(runtime, p.member, "user", w.astro)) == mine
    assert _rows(_usage(runtime, p.member, "user")) == mine
    by_project = _rows(_usage(runtime, p.auditor, "project"))
    assert by_project == {w.astro: (3, 3, 22.0, 26.0, 16.0, 10.0),
                          w.geo: (1, 1, 2.0, 2.0, 0.0, 2.0)}
    by_size = _rows(_usage(runtime, p.admin, "size"))
    # The database's buckets are the pure rule's.
    assert set(by_size) == {rm.size_label(c) for c in (1, 2, 4, 32)} == {"1", "2-4", "17-64"}
    assert by_size["2-4"] == (2, 2, 6.0, 10.0, 0.0, 10.0)
    with pytest.raises(NotFound):
        _usage(runtime, p.other, "site", w.astro)
    with pytest.raises(Invalid, match="by is one of"):
        _usage(runtime, p.admin, "colour")


def test_waits_and_expansion_factor(runtime: Runtime, world: tuple[World, People]) -> None:
    w, p = world
    with transaction(runtime.sessions) as s:
        report = reports.wait_report(s, p.admin, None, Period(), NOW)
    rows = {r["site"]: r for r in report["rows"]}
    # alpha: waits 60 (j5), 100 (j1), 900 (j3); beta: 300 (j2). Nearest rank.
    assert rows["alpha"]["jobs"] == 3 and rows["alpha"]["finished"] == 3
    assert rows["alpha"]["wait_p50"] == pytest.approx(100, abs=0.01)
    assert rows["alpha"]["wait_p90"] == pytest.approx(900, abs=0.01)
    assert rows["beta"]["wait_p50"] == pytest.approx(300, abs=0.01)
    assert rows["*"]["jobs"] == 4
    assert rows["*"]["wait_p50"] == pytest.approx(100, abs=0.01)
    assert rows["*"]["wait_p90"] == pytest.approx(900, abs=0.01)
    assert rows["*"]["wait_mean"] == pytest.approx(340, abs=0.01)
    # (60 + 100 + 900 + 7200 + 3600 + 1800) / (7200 + 3600 + 1800)
    assert rows["alpha"]["expansion_factor"] == pytest.approx(13660 / 12600, rel=1e-6)
    assert rows["beta"]["expansion_factor"] == pytest.approx(3900 / 3600, rel=1e-6)
    with transaction(runtime.sessions) as s:
        mine = reports.wait_report(s, p.member, w.astro, Period(), NOW)
        # j2 and j3 are the member's; only j3 (alpha) and j2 (beta) are counted.
        assert {r["site"]: r["jobs"] for r in mine["rows"]} == {"alpha": 1, "beta": 1, "*": 2}
        early = reports.wait_report(s, p.admin, None,
                                    Period(as_of=DAY0 + timedelta(days=2)), NOW)
    assert {r["site"]: r["jobs"] for r in early["rows"]} == {"alpha": 1, "*": 1}
    with transaction(runtime.sessions) as s:
        none = reports.wait_report(s, p.admin, None, Period(as_of=DAY0), NOW)
    assert none["rows"] == [{"site": "*", "jobs": 0, "wait_p50": None,
                             "wait_p90": None, "wait_mean": None,
                             "finished": 0, "expansion_factor": None}]


def test_refunds_and_adjustments_with_reasons(runtime: Runtime,
                                              world: tuple[World, People]) -> None:
    w, p = world
    with transaction(runtime.sessions) as s:
        rows = reports.adjustment_report(s, p.pi, w.astro, Period(), NOW)["rows"]
        earlier = reports.adjustment_report(
            s, p.pi, w.astro, Period(as_of=NOW - timedelta(days=1, seconds=1)), NOW)["rows"]
        others = reports.adjustment_report(s, p.other, None, Period(), NOW)["rows"]
    assert [(r["kind"], r["amount_su"], r["job_id"], r["actor"]) for r in rows] == [
        ("refund", 16.0, w.jobs["j3"], "worker"), ("adjustment", 10.0, None, "committee")]
    assert "node" in (rows[0]["reason"] or "").lower()
    assert rows[1]["reason"] == "extra for the review"
    assert [r["kind"] for r in earlier] == ["refund"]
    assert others == []


def test_a_users_jobs_like_sacct(runtime: Runtime, world: tuple[World, People]) -> None:
    w, p = world

    def listed(who: Principal, project: str | None = None, **period: object
               ) -> list[tuple[object, ...]]:
        with transaction(runtime.sessions) as s:
            found = reports.job_usage(s, who, project, Period(**period), 100, NOW)  # type: ignore[arg-type]
        return [(j["job_id"], j["state"], j["elapsed"], j["cores"], j["charge_su"])
                for j in found["jobs"]]

    j = w.jobs
    assert listed(p.member) == [(j["j4"], "ACCEPTED", 0, 0, 0.0),
                                (j["j3"], "COMPLETED", 1800, 32, 0.0),
                                (j["j2"], "COMPLETED", 3600, 4, 8.0)]
    assert [row[0] for row in listed(p.member, states=("COMPLETED",))] == [j["j3"], j["j2"]]
    assert {row[0] for row in listed(p.pi, w.astro)} == {j["j1"], j["j2"], j["j3"], j["j4"]}
    assert {row[0] for row in listed(p.member, w.astro)} == {j["j2"], j["j3"], j["j4"]}
    assert listed(p.pi) == [(j["j1"], "COMPLETED", 3600, 2, 2.0)]
    assert [row[0] for row in listed(p.member, since=NOW - timedelta(days=3))] == [
        j["j4"], j["j3"]]
    with pytest.raises(NotFound):
        listed(p.other, w.astro)
    with pytest.raises(Invalid, match="state"):
        listed(p.member, states=("DONE",))


def test_both_ways_of_reading_a_past_balance_agree(runtime: Runtime,
                                                   world: tuple[World, People]) -> None:
    """As of T the rows up to T are summed, or (T nearer now) the running sums less the
    rows after T: the same figures at every moment of the history."""
    moments = [DAY0, DAY0 + timedelta(days=1, seconds=-1), DAY0 + timedelta(days=1),
               NOW - timedelta(days=5), NOW - timedelta(days=2, seconds=1),
               NOW - timedelta(hours=1), NOW]
    with transaction(runtime.sessions) as s:
        for t in moments:
            window = t - timedelta(days=30)
            summed = repo.allocation_sums(s, Scope(everything=True), t, window,
                                          now=t + timedelta(days=3650))
            subtracted = repo.allocation_sums(s, Scope(everything=True), t, window, now=t)
            assert summed == subtracted, t
            assert summed  # the allocations exist from DAY0
