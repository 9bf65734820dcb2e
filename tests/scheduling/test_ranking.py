"""Ranking and the batch routing pass (pure)."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.scheduling.policies.cheapest import CHEAPEST
from gateway.scheduling.policies.deadline import DEADLINE
from gateway.scheduling.policies.fastest import FASTEST
from gateway.scheduling.ranking import (
    Candidate,
    Forecast,
    forecast_every_site,
    rank,
    route_pass,
)
from gateway.schemas import parse
from gateway.schemas.placements import CandidateOut
from gateway.services.routing.decisions import candidate_out, forecast_out
from tests.scheduling import recorded_pass


def fc(wait: float, bound: float, runtime: float = 100.0, staging: float = 0.0) -> Forecast:
    return Forecast(wait, bound, runtime, staging)


def test_fastest_takes_lowest_median_completion_and_explains() -> None:
    decision = rank([Candidate("a", forecast=fc(600, 900)),
                     Candidate("b", forecast=fc(60, 3000)),
                     Candidate("c", excluded="needs 4 nodes; site 'c' has at most 2")])
    assert decision.chosen == ("b",)
    assert [c.site for c in decision.candidates] == ["b", "a", "c"]
    assert decision.why.startswith("Site 'b' has the earliest predicted completion")
    assert "next best 'a'" in decision.why


def test_staging_and_runtime_count_towards_completion() -> None:
    decision = rank([Candidate("near", forecast=fc(100, 200, runtime=4000)),
                     Candidate("fast", forecast=fc(100, 200, runtime=1000, staging=500))])
    assert decision.chosen == ("fast",)


def test_ties_break_on_bound_then_home_then_backlog_never_the_name() -> None:
    assert rank([Candidate("b", forecast=fc(10, 50)),
                 Candidate("a", forecast=fc(10, 90))]).chosen == ("b",)
    assert rank([Candidate("b", forecast=fc(10, 50)),
                 Candidate("a", forecast=fc(10, 50), home=True)]).chosen == ("a",)
    light = Forecast(10, 50, 100, 0, backlog=30.0)
    heavy = Forecast(10, 50, 100, 0, backlog=900.0)
    for first, second in (("a", "b"), ("b", "a"), ("zeta", "alpha")):
        # Renaming a site must not move a job: the lighter backlog wins either way.
        assert rank([Candidate(first, forecast=heavy),
                     Candidate(second, forecast=light)]).chosen == (second,)
    # Nothing to tell them apart: the order given (the configuration's) stands.
    assert rank([Candidate("b", forecast=fc(10, 50)),
                 Candidate("a", forecast=fc(10, 50))]).chosen == ("b",)


def test_a_job_leaves_home_only_when_the_gain_clears_the_bound() -> None:
    home = Candidate("home", forecast=fc(1000, 3000), home=True)  # completion 1100
    # 900 s sooner on the median, but the 95% bound (100 + 2000) does not beat 1100.
    risky = Candidate("risky", forecast=fc(100, 2000))
    decision = rank([risky, home])
    assert decision.chosen == ("home",)
    assert [c.site for c in decision.candidates] == ["home", "risky"]
    assert decision.why == ("Site 'home' is the job's home (18 min); 'risky' is predicted "
                            "sooner (3 min) but its 95% bound (35 min) does not beat home.")
    # A bound under home's median clears the guard.
    sure = Candidate("sure", forecast=fc(100, 900))
    assert rank([sure, home]).chosen == ("sure",)
    # No home among the open sites (it cannot take the job): nothing to guard.
    assert rank([risky, Candidate("home", "too small", home=True)]).chosen == ("risky",)


def test_deadline_prefers_likelier_finish_over_faster_median() -> None:
    # 'steady' finishes by 1200 s almost surely; 'gamble' has the lower median but a
    # long tail that misses the deadline more often.
    steady = Forecast(500, 600, 100, 0, ((0.5, 500), (0.95, 600)))
    gamble = Forecast(100, 5000, 100, 0, ((0.5, 100), (0.95, 5000)))
    candidates = [Candidate("steady", forecast=steady), Candidate("gamble", forecast=gamble)]
    assert rank(candidates, FASTEST).chosen == ("gamble",)
    decision = rank(candidates, DEADLINE, deadline=1200)
    assert decision.chosen == ("steady",)
    assert "best chance to finish by the deadline (95%)" in decision.why


def test_probability_interpolates_and_caps_at_last_level() -> None:
    f = Forecast(100, 1000, 0, 0, ((0.5, 100), (0.95, 1000)))
    assert f.p_start_within(-1) == 0.0
    assert f.p_start_within(50) == pytest.approx(0.25)
    assert f.p_start_within(550) == pytest.approx(0.725)
    assert f.p_start_within(10_000) == pytest.approx(0.95)
    assert Forecast(0, 0, 0, 0).p_start_within(0) == pytest.approx(0.95)


def test_hedge_chooses_k_best_and_all_excluded_says_why() -> None:
    decision = rank([Candidate("a", forecast=fc(3, 4)), Candidate("b", forecast=fc(1, 2)),
                     Candidate("c", forecast=fc(2, 3))], hedge=2)
    assert decision.chosen == ("b", "c")
    assert "hedged over 'b', 'c'" in decision.why
    none = rank([Candidate("a", excluded="disabled")])
    assert none.chosen == ()
    assert none.why == "No site can run this job (a: disabled)."


def test_bad_calls_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown routing policy"):
        rank([], "cheapest-first")
    with pytest.raises(ValueError, match="needs a deadline"):
        rank([Candidate("a", forecast=fc(1, 2))], DEADLINE)
    with pytest.raises(ValueError, match="needs a forecast"):
        rank([Candidate("a")])


def priced(site: str, quote: int | None, completion: float, bound: float | None = None,
           ) -> Candidate:
    """A candidate finishing (median) `completion` s from now, priced `quote` milli-SU."""
    return Candidate(site, forecast=fc(completion - 100, (bound or completion) - 100),
                     quote_milli=quote)


CHEAP_SLOW = priced("cheap", 2000, 5000)
MID = priced("mid", 4000, 1000)
DEAR_FAST = priced("dear", 8000, 200)


@pytest.mark.parametrize(("candidates", "hedge", "deadline", "chosen", "order", "why"), [
    # No deadline: the lowest quote, however slow.
    ([DEAR_FAST, MID, CHEAP_SLOW], 1, None, ("cheap",), ["cheap", "mid", "dear"],
     "Site 'cheap' has the lowest quote (2.000 SU; predicted completion 83 min, 95% bound "
     "83 min); next cheapest 'mid' at 4.000 SU."),
    # A deadline the cheap site misses: the cheapest of those predicted to make it.
    ([DEAR_FAST, MID, CHEAP_SLOW], 1, 3600.0, ("mid",), ["mid", "dear", "cheap"],
     "Site 'mid' has the lowest quote of the sites predicted to finish by the deadline "
     "(4.000 SU; predicted completion 17 min, 95% bound 17 min); next cheapest 'dear' at "
     "8.000 SU."),
    # Hedge k takes the k cheapest (within the deadline first).
    ([DEAR_FAST, MID, CHEAP_SLOW], 2, None, ("cheap", "mid"), ["cheap", "mid", "dear"],
     "Site 'cheap' has the lowest quote (2.000 SU; predicted completion 83 min, 95% bound "
     "83 min); next cheapest 'mid' at 4.000 SU; hedged over 'cheap', 'mid'."),
    ([DEAR_FAST, MID, CHEAP_SLOW], 2, 3600.0, ("mid", "dear"), ["mid", "dear", "cheap"],
     None),
    # Equal quotes: the earlier predicted completion, then the 95% bound, then the order
    # given (never the name).
    ([priced("b", 1000, 900), priced("a", 1000, 300)], 1, None, ("a",), ["a", "b"], None),
    ([priced("b", 1000, 300, 400), priced("a", 1000, 300, 900)], 1, None, ("b",),
     ["b", "a"], None),
    ([priced("b", 1000, 300), priced("a", 1000, 300)], 1, None, ("b",), ["b", "a"], None),
    # A site without a quote comes after every priced one.
    ([priced("free?", None, 100), MID], 1, None, ("mid",), ["mid", "free?"],
     "Site 'mid' has the lowest quote (4.000 SU; predicted completion 17 min, 95% bound "
     "17 min); next cheapest 'free?' at no quote."),
    ([priced("x", None, 900), priced("y", None, 100)], 1, None, ("y",), ["y", "x"],
     "No site has a quote for this job; site 'y' has the earliest predicted completion "
     "(2 min, 95% bound 2 min)."),
    # Nobody is predicted to make the deadline: the earliest completion, whatever it costs.
    ([DEAR_FAST, MID, CHEAP_SLOW], 1, 100.0, ("dear",), ["dear", "mid", "cheap"],
     "No site is predicted to finish by the deadline; site 'dear' has the earliest "
     "predicted completion (3 min, 95% bound 3 min)."),
    # The deadline is met on the median completion, so a site exactly at it qualifies.
    ([DEAR_FAST, MID], 1, 1000.0, ("mid",), ["mid", "dear"], None),
    # Excluded sites stay last, in the order given, their quote kept.
    ([Candidate("gone", "site 'gone' is drained (not accepting jobs)", quote_milli=1),
      MID], 1, None, ("mid",), ["mid", "gone"], None),
])
def test_cheapest(candidates: list[Candidate], hedge: int, deadline: float | None,
                  chosen: tuple[str, ...], order: list[str], why: str | None) -> None:
    decision = rank(candidates, CHEAPEST, hedge, deadline)
    assert decision.policy == CHEAPEST
    assert decision.chosen == chosen
    assert [c.site for c in decision.candidates] == order
    if why is not None:
        assert decision.why == why
    # Quotes travel with the candidates (the explanation shows them).
    assert {c.site: c.quote_milli for c in decision.candidates} == {
        c.site: c.quote_milli for c in candidates}


def test_other_policies_ignore_quotes() -> None:
    candidates = [DEAR_FAST, MID, CHEAP_SLOW]
    assert rank(candidates, FASTEST).chosen == ("dear",)
    assert rank(candidates, DEADLINE, deadline=1200).chosen == ("dear",)


def test_route_pass_keeps_each_candidates_quote() -> None:
    routed = route_pass([100.0], lambda job: [Candidate("x", quote_milli=9000),
                                              Candidate("y", quote_milli=1000)],
                        QueueLength(), lambda job: (CHEAPEST, 1, None))
    [decision] = [r.decision for r in routed]
    assert decision.chosen == ("y",)
    assert [(c.site, c.quote_milli, c.forecast is not None) for c in decision.candidates] == [
        ("y", 1000, True), ("x", 9000, True)]


class QueueLength:
    """A forecaster whose wait is the work already committed to the site."""

    def __init__(self) -> None:
        self.load = {"x": 0.0, "y": 50.0}

    def forecast(self, job: float, site: str) -> Forecast:
        return Forecast(self.load[site], self.load[site], job, 0.0)

    def commit(self, job: float, site: str) -> None:
        self.load[site] += job

    def earliest_completion(self, job: float, site: str, walk: bool = False) -> float:
        return self.load[site] + job


def test_route_pass_jobs_see_each_others_load() -> None:
    routed = route_pass([100.0, 100.0, 100.0],
                        lambda job: [Candidate("x"), Candidate("y")],
                        QueueLength(), lambda job: (FASTEST, 1, None))
    # Alone, every job would go to the idle 'x'; in one pass the second sees the first.
    assert [r.decision.chosen for r in routed] == [("x",), ("y",), ("x",)]


def test_forecast_at_keeps_every_other_field() -> None:
    # route_pass's fast `replace`: a field added to Candidate must be carried too.
    given = Candidate("a", None, None, 1200, "img", "last resort", True)
    forecast = Forecast(1.0, 2.0, 3.0, 4.0)
    assert given.forecast_at(forecast) == dataclasses.replace(given, forecast=forecast)
    assert given.not_forecast(9.0) == dataclasses.replace(given, not_before=9.0)
    assert [f.name for f in dataclasses.fields(Candidate)] == [
        "site", "excluded", "forecast", "quote_milli", "image", "caution", "home",
        "not_before"]


def test_with_backlog_keeps_every_other_field() -> None:
    given = Forecast(1.0, 2.0, 3.0, 4.0, ((0.5, 1.0), (0.9, 2.0)), "basis", 5.0, 1.5, 6.0,
                     0.5, False, False, 7.0, (8.0, 9.0), 10.0)
    assert given.with_backlog(9.0) == dataclasses.replace(given, backlog=9.0)
    welcome = dataclasses.replace(given, welcome=True)
    assert welcome.unwelcome() == given
    # A new field: carry it in with_backlog and unwelcome.
    assert len(dataclasses.fields(Forecast)) == 15


def test_the_class_bound_is_sent_only_when_a_history_gave_one() -> None:
    told = Forecast(60.0, 9000.0, 10.0, 0.0, class_bound=7200.0)
    assert forecast_out(told)["class_bound"] == 7200.0
    assert "class_bound" not in forecast_out(dataclasses.replace(told, class_bound=None))


def test_the_wait_if_late_is_sent_only_when_known() -> None:
    told = Forecast(60.0, 9000.0, 10.0, 0.0, wait_likely=600.0, wait_if_late=7200.0)
    assert forecast_out(told)["wait_if_late"] == 7200.0
    assert "wait_if_late" not in forecast_out(dataclasses.replace(told, wait_if_late=None))


class Fixed:
    """A forecaster of fixed forecasts per site, counting what it was asked; its bound is
    the forecast's own completion (the tightest a forecaster may give)."""

    def __init__(self, forecasts: dict[str, Forecast]) -> None:
        self.forecasts = forecasts
        self.asked: list[str] = []

    def forecast(self, job: float, site: str) -> Forecast:
        self.asked.append(site)
        return self.forecasts[site]

    def commit(self, job: float, site: str) -> None:
        pass

    def earliest_completion(self, job: float, site: str, walk: bool = False) -> float:
        return self.forecasts[site].completion


def test_fastest_forecasts_only_the_sites_that_can_lead_or_follow() -> None:
    sites = {"a": fc(500, 900), "b": fc(60, 300), "c": fc(200, 400), "d": fc(9000, 9999),
             "e": fc(0, 0, runtime=99_000)}
    forecaster = Fixed(sites)
    [routed] = route_pass([1.0], lambda job: [Candidate(s) for s in sites], forecaster,
                          lambda job: (FASTEST, 1, None))
    decision = routed.decision
    assert decision.chosen == ("b",)
    assert sorted(forecaster.asked) == ["b", "c"]  # the leader and the runner-up
    assert [(c.site, c.forecast is not None, c.not_before) for c in decision.candidates] == [
        ("b", True, None), ("c", True, None), ("a", False, 600.0), ("d", False, 9100.0),
        ("e", False, 99_000.0)]
    assert decision == dataclasses.replace(
        rank([Candidate(s, forecast=f) for s, f in sites.items()]),
        candidates=decision.candidates)
    # Ranked again without the leader (its project can no longer pay there), the sites
    # left unforecast are forecast first: 'a' follows 'c'.
    again = rank([dataclasses.replace(c, excluded="spent", forecast=None) if c.site == "b"
                  else c for c in forecast_every_site(decision.candidates, 1.0, forecaster)])
    assert again.chosen == ("c",) and "next best 'a'" in again.why


def test_home_and_every_site_sooner_than_it_are_forecast() -> None:
    # Home finishes at 2,100 s; 'x' clears it. Every site that might come before home
    # must be known: 'y' (sooner than home, not than 'x') is the runner-up.
    sites = {"home": fc(2000, 2500), "x": fc(100, 150), "y": fc(1500, 1900),
             "z": fc(5000, 6000)}
    forecaster = Fixed(sites)
    [routed] = route_pass([1.0], lambda job: [Candidate(s, home=s == "home") for s in sites],
                          forecaster, lambda job: (FASTEST, 1, None))
    assert routed.decision.chosen == ("x",)
    assert "next best 'y'" in routed.decision.why
    assert sorted(forecaster.asked) == ["home", "x", "y"]


def test_no_pruning_with_a_hedge_or_another_policy() -> None:
    sites = {"a": fc(500, 900), "b": fc(60, 300), "c": fc(200, 400)}
    for policy, hedge in ((FASTEST, 2), (CHEAPEST, 1)):
        forecaster = Fixed(sites)
        route_pass([1.0], lambda job: [Candidate(s, quote_milli=1) for s in sites],
                   forecaster, lambda job, p=policy, h=hedge: (p, h, None))
        assert sorted(forecaster.asked) == ["a", "b", "c"]
    left = [Candidate("a", forecast=fc(1, 2)), Candidate("b").not_forecast(500.0)]
    assert rank(left).chosen == ("a",)
    for policy, hedge in ((FASTEST, 2), (CHEAPEST, 1)):
        with pytest.raises(ValueError, match="needs a forecast"):
            rank(left, policy, hedge)


def test_pruned_passes_decide_as_forecasting_every_site() -> None:
    # Six random federations (homes, hard constraints, sites with history and without;
    # half with guests some sites do not welcome): the pass that prunes and one whose
    # bounds prune nothing (0) decide alike, word for word.
    unwelcome = 0
    for seed in range(6):
        guests = seed % 2 == 1
        pruned = recorded_pass.run(seed, FASTEST, guests=guests)
        everything = recorded_pass.run(seed, FASTEST, bounds=False, guests=guests)
        unwelcome += sum(not c.forecast.welcome for r in everything
                         for c in r.decision.candidates if c.forecast)
        left = 0
        for a, b in zip(pruned, everything, strict=True):
            assert (a.decision.chosen, a.decision.why) == (b.decision.chosen, b.decision.why)
            forecast = {c.site: c.forecast for c in a.decision.candidates if c.forecast}
            assert forecast == {c.site: c.forecast for c in b.decision.candidates
                                if c.site in forecast}
            left += sum(c.not_before is not None for c in a.decision.candidates)
        assert left > 1000, (seed, left)
    assert unwelcome > 100, unwelcome


def test_a_site_left_unforecast_is_sent_and_stored_with_its_bound() -> None:
    sent = candidate_out(Candidate("far").not_forecast(86400.0), None)
    assert sent == {"site": "far", "excluded": None, "forecast": None, "p_deadline": None,
                    "not_before": 86400.0}
    assert parse(CandidateOut, dict(sent)) == sent  # read back from a stored placement
    assert "not_before" not in candidate_out(Candidate("near", forecast=fc(1, 2)), None)
