"""Ranking and the batch routing pass (pure)."""

from __future__ import annotations

import pytest

from gateway.scheduling.ranking import (
    DEADLINE,
    FASTEST,
    Candidate,
    Forecast,
    rank,
    route_pass,
)


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


def test_ties_break_on_bound_then_name() -> None:
    assert rank([Candidate("b", forecast=fc(10, 50)),
                 Candidate("a", forecast=fc(10, 90))]).chosen == ("b",)
    assert rank([Candidate("b", forecast=fc(10, 50)),
                 Candidate("a", forecast=fc(10, 50))]).chosen == ("a",)


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
        rank([], "cheapest")
    with pytest.raises(ValueError, match="needs a deadline"):
        rank([Candidate("a", forecast=fc(1, 2))], DEADLINE)
    with pytest.raises(ValueError, match="needs a forecast"):
        rank([Candidate("a")])


class QueueLength:
    """A forecaster whose wait is the work already committed to the site."""

    def __init__(self) -> None:
        self.load = {"x": 0.0, "y": 50.0}

    def forecast(self, job: float, site: str) -> Forecast:
        return Forecast(self.load[site], self.load[site], job, 0.0)

    def commit(self, job: float, site: str) -> None:
        self.load[site] += job


def test_route_pass_jobs_see_each_others_load() -> None:
    routed = route_pass([100.0, 100.0, 100.0],
                        lambda job: [Candidate("x"), Candidate("y")],
                        QueueLength(), lambda job: (FASTEST, 1, None))
    # Alone, every job would go to the idle 'x'; in one pass the second sees the first.
    assert [r.decision.chosen for r in routed] == [("x",), ("y",), ("x",)]
