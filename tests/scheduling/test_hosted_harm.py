"""Hosted harm: a site whose own users' jobs the guests routed into it delayed beyond
tolerance takes no more guests until the delay falls back."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from gateway.scheduling.forecaster import JobNeed, SiteForecaster, SiteState
from gateway.scheduling.hosted_harm import TOLERANCE, HostedHarm
from gateway.scheduling.queue_profile import QueueState
from gateway.scheduling.ranking import Candidate, Forecast, rank
from gateway.scheduling.runtime_predictor import RuntimePredictor
from gateway.scheduling.wait_predictor import WaitPredictor


def test_the_share_is_the_guests_total_delay_over_the_total_wait_without_them() -> None:
    harm = HostedHarm()
    assert harm.share("a") == 0.0 and harm.hosts("a")
    harm.observe("a", wait=1100.0, delay=100.0)
    harm.observe("a", wait=1000.0, delay=0.0)
    assert harm.share("a") == pytest.approx(100.0 / 2000.0)
    assert harm.hosts("a")  # 5%: within the promise
    harm.observe("a", wait=500.0, delay=600.0)  # a delay is never more than the wait
    assert harm.share("a") == pytest.approx(600.0 / 2000.0)
    assert not harm.hosts("a") and harm.hosts("b")
    # Its users' later jobs, undelayed, bring the share back within the promise.
    harm.observe("a", wait=10000.0, delay=0.0)
    assert harm.share("a") == pytest.approx(600.0 / 12000.0) and harm.hosts("a")


def test_any_delay_of_users_who_would_not_have_waited_closes_the_site() -> None:
    harm = HostedHarm()
    harm.observe("a", wait=0.0, delay=0.0)
    assert harm.hosts("a")
    harm.observe("a", wait=10.0, delay=10.0)
    assert harm.share("a") == math.inf and not harm.hosts("a")
    with pytest.raises(ValueError):
        HostedHarm(tolerance=math.nan)
    assert TOLERANCE == 0.05  # issue 27's promise: no origin's mean wait +5%


def _forecaster(harm: HostedHarm | None = None) -> SiteForecaster:
    # Site "a": 4 processors, all held by a guest for another 1000 s; without the guest
    # it is idle. Site "b": idle.
    guest = QueueState(4, running=((4, 1000.0, 1000.0),))
    return SiteForecaster([SiteState("a", guest, own=QueueState(4)),
                           SiteState("b", QueueState(4))],
                          WaitPredictor(), RuntimePredictor(), harm=harm)


def test_a_home_jobs_delay_is_its_start_with_the_guests_less_without() -> None:
    forecaster = _forecaster()
    first, second = JobNeed("u", "app", 4, 500.0), JobNeed("v", "app", 4, 500.0)
    forecaster.forecast(first, "a")
    assert forecaster.home_wait(first, "a") == pytest.approx((1000.0, 1000.0))
    forecaster.commit(first, "a")
    # The next home job of the pass sees the first on both queues: it would wait 500 s
    # behind it alone, 1500 s with the guest.
    assert forecaster.forecast(second, "a").wait_median == pytest.approx(1500.0)
    assert forecaster.home_wait(second, "a") == pytest.approx((1500.0, 1000.0))
    forecaster.forecast(first, "b")
    assert forecaster.home_wait(first, "b") == (0.0, 0.0)  # no guest known there


def test_a_site_that_delayed_its_users_takes_no_guest_and_the_job_stays_home() -> None:
    harm = HostedHarm()
    harm.observe("b", wait=1000.0, delay=500.0)
    forecaster = _forecaster(harm)
    job = JobNeed("u", "app", 4, 500.0)
    at_a, at_b = forecaster.forecast(job, "a"), forecaster.forecast(job, "b")
    assert at_a.hosts and not at_b.hosts
    # "b" starts the job now, "a" (its home) in 1000 s: without the harm it would leave.
    away = Candidate("b", forecast=at_b)
    home = Candidate("a", forecast=at_a, home=True)
    assert rank([replace(away, forecast=replace(at_b, hosts=True)), home]).chosen == ("b",)
    decision = rank([away, home])
    assert decision.chosen == ("a",)
    assert "takes no job from another home while the jobs routed there delay its own " \
           "users" in decision.why
    # Its own users' jobs still go there: the guard keeps out only guests.
    assert rank([Candidate("b", forecast=at_b, home=True), Candidate("a", forecast=at_a)]
                ).chosen == ("b",)


def test_a_closed_site_ranks_behind_home_and_the_next_site_away_may_lead() -> None:
    def fc(wait: float, bound: float, hosts: bool = True) -> Forecast:
        return Forecast(wait, bound, 100.0, 0.0, hosts=hosts, projected_wait=0.0)

    closed = Candidate("closed", forecast=fc(0, 10, hosts=False))
    open_ = Candidate("open", forecast=fc(20, 40))
    home = Candidate("home", forecast=fc(5000, 9000), home=True)
    decision = rank([closed, open_, home])
    assert [c.site for c in decision.candidates] == ["open", "home", "closed"]


def test_a_guest_goes_only_where_it_starts_at_once_even_at_every_limit() -> None:
    home = Candidate("home", forecast=Forecast(5000, 9000, 100.0, 0.0, projected_wait=5000),
                     home=True)
    # Sooner by far, bound and all, but it would queue 60 s at "busy" (every job there
    # running to its limit): ahead of whatever busy's own users submit next.
    busy = Candidate("busy", forecast=Forecast(0, 10, 100.0, 0.0, projected_wait=60.0))
    decision = rank([busy, home])
    assert decision.chosen == ("home",)
    assert decision.why.endswith("but the job would queue there ahead of its own users' "
                                 "next jobs.")
    idle = Candidate("idle", forecast=Forecast(0, 10, 100.0, 0.0, projected_wait=0.0))
    assert rank([busy, idle, home]).chosen == ("idle",)
    # At its home a job may queue: the rule keeps out only guests.
    assert rank([replace(busy, home=True), idle]).chosen == ("busy",)
