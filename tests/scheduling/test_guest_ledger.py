"""The guest ledger: a site takes guests that would queue there only while its users were
given as much at other sites; the forecaster marks the others, the guard ranks them
behind home."""

from __future__ import annotations

import pytest

from gateway.scheduling.forecaster import SiteForecaster
from gateway.scheduling.guest_ledger import GuestLedger, guest_work
from gateway.scheduling.prediction.runtime_predictor import RuntimePredictor
from gateway.scheduling.prediction.wait_predictor import WaitPredictor
from gateway.scheduling.queues.queue_state import QueueState
from gateway.scheduling.ranking import Candidate, Forecast, rank
from gateway.scheduling.routing_inputs import JobNeed, SiteState


def test_a_site_is_credited_what_its_users_were_given_elsewhere() -> None:
    ledger = GuestLedger()
    ledger.placed("a", "b", 100)  # a's job went to b
    ledger.placed("a", "a", 50)  # stayed home
    ledger.placed(None, "b", 70)  # no home: no one's guest
    assert (ledger.credit("a"), ledger.credit("b"), ledger.credit("c")) == (100, -100, 0)


def test_the_window_holds_the_last_decisions_stays_included() -> None:
    ledger = GuestLedger(window=2)
    ledger.placed("a", "b", 100)
    ledger.placed("b", "b", 5)
    assert ledger.credit("a") == 100
    ledger.placed("c", "a", 7)  # the first decision leaves the window
    assert (ledger.credit("a"), ledger.credit("b"), ledger.credit("c")) == (-7, 0, 7)
    with pytest.raises(ValueError, match="at least one decision"):
        GuestLedger(window=0)


def test_work_is_whole_processor_seconds_so_any_order_sums_alike() -> None:
    assert guest_work(3, 10.4) == 31 and guest_work(2, 0.2) == 0
    forward, backward = GuestLedger(), GuestLedger()
    works = [guest_work(p, r) for p, r in ((7, 0.1), (3, 1e9 / 3), (11, 2.7), (5, 1 / 3))]
    for work in works:
        forward.placed("a", "b", work)
    for work in reversed(works):
        backward.placed("a", "b", work)
    assert forward.credit("b") == backward.credit("b") == -sum(works)


# 'busy' is full for 100 s (its running job's limit): a job there would queue. 'idle' is
# empty: a job there starts at once even if every job runs to its limit.
SITES = [SiteState("home", QueueState(4)),
         SiteState("busy", QueueState(4, running=((4, 100.0, 100.0),))),
         SiteState("idle", QueueState(4))]
GUEST = JobNeed("u", "app", 2, 300.0, key="j", home="home")  # 600 processor-seconds


def forecaster(ledger: GuestLedger | None) -> SiteForecaster:
    return SiteForecaster(SITES, WaitPredictor(), RuntimePredictor(), ledger=ledger)


def test_a_guest_that_would_queue_is_welcome_only_on_credit() -> None:
    ledger = GuestLedger()
    ledger.placed("anywhere", "idle", 10_000)  # idle hosted others: its credit is negative
    routing = forecaster(ledger)
    assert routing.forecast(GUEST, "busy").projected_wait == 100.0
    assert [routing.forecast(GUEST, s).welcome for s in ("home", "busy", "idle")] == [
        True, False, True]  # home is no guest; idle delays no one, whatever its credit
    ledger.placed("busy", "home", 599)  # busy's users were given 599: not enough
    assert not forecaster(ledger).forecast(GUEST, "busy").welcome
    ledger.placed("busy", "home", 1)
    assert forecaster(ledger).forecast(GUEST, "busy").welcome
    # Without a ledger, or for a job with no home, every site welcomes.
    assert forecaster(None).forecast(GUEST, "busy").welcome
    assert forecaster(GuestLedger()).forecast(JobNeed("u", "app", 2, 300.0), "busy").welcome


def test_the_welcome_follows_the_ledger_within_a_pass() -> None:
    # The forecast itself is kept per kind of job; its welcome is not.
    ledger = GuestLedger()
    routing = forecaster(ledger)
    assert not routing.forecast(GUEST, "busy").welcome
    routing.commit(JobNeed("v", "app", 1, 600.0, key="k", home="busy"), "idle")
    assert routing.forecast(GUEST, "busy").welcome  # busy's user was just given 600


def test_a_commit_counts_once_at_the_first_choice() -> None:
    ledger = GuestLedger()
    routing = forecaster(ledger)
    routing.commit(GUEST, "idle")  # hedged: first choice idle, then busy
    routing.commit(GUEST, "busy")
    assert (ledger.credit("home"), ledger.credit("idle"), ledger.credit("busy")) == (
        600, -600, 0)
    routing.commit(JobNeed("w", "app", 1, 60.0, key="h", home="home"), "home")
    assert ledger.credit("home") == 600


def forecast(completion: float, bound: float, welcome: bool = True) -> Forecast:
    made = Forecast(0.0, bound - completion, completion, 0.0)
    return made if welcome else made.unwelcome()


def test_a_site_that_does_not_welcome_the_job_ranks_behind_home() -> None:
    home = Candidate("home", forecast=forecast(1000.0, 1000.0), home=True)
    closed = Candidate("closed", forecast=forecast(10.0, 20.0, welcome=False))
    decision = rank([home, closed], "fastest")
    assert decision.chosen == ("home",)
    assert [c.site for c in decision.candidates] == ["home", "closed"]
    assert decision.why == (
        "Site 'home' is the job's home (17 min); 'closed' is predicted sooner (10 s) "
        "but the job would queue there, and that site's users have been given less at "
        "other sites than its guests there.")
    # A site that welcomes it and clears home leads; the closed one stays behind home.
    open_ = Candidate("open", forecast=forecast(100.0, 200.0))
    assert [c.site for c in rank([home, closed, open_], "fastest").candidates] == [
        "open", "home", "closed"]


def test_a_leader_away_leads_among_the_sites_that_welcome_the_job() -> None:
    home = Candidate("home", forecast=forecast(1000.0, 1000.0), home=True)
    closed = Candidate("closed", forecast=forecast(10.0, 20.0, welcome=False))
    open_ = Candidate("open", forecast=forecast(100.0, 200.0))
    # 'closed' is sooner than 'open': the reason must not call 'open' the earliest.
    assert rank([home, closed, open_], "fastest").why == (
        "Site 'open' has the earliest predicted completion of the sites that welcome "
        "the job (2 min, 95% bound 3 min); next best 'home' at 17 min.")
    assert rank([home, open_], "fastest").why == (
        "Site 'open' has the earliest predicted completion (2 min, 95% bound 3 min); "
        "next best 'home' at 17 min.")
