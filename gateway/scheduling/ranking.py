"""Ranking: which of the sites that can take a job it should go to, and why (pure).

Routing is two stages. Hard constraints first (`Candidate.excluded`: a sentence kept for
the explanation); then the sites left are ordered by the job's policy over each site's
`Forecast` (staging + queue wait + run time, seconds from now). The policies and their
registry are gateway/scheduling/policies/ (`fastest`, the default; `deadline`;
`cheapest`; `pinned`, for a job naming its site, which routing.py never ranks): `rank`
looks the policy up by name, lets it order the open candidates and say why the first
leads, and words the sentence (the hedge, a last resort's caution, or why no site can).

`route_pass` routes a batch of pending jobs in one computation: each job routed adds
its predicted load to the chosen site (`Forecaster.commit`), so the jobs of one pass see
each other and do not all pile onto the site that looked idle at the start. Production
(the worker's routing step) and the simulator call the same two functions.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, Protocol, TypeVar

from gateway.scheduling.policies import registry
from gateway.scheduling.policies.base import DeadlineRule, RoutingPolicy


@dataclass(frozen=True, slots=True)
class Forecast:
    """One site's prediction for one job; every time in seconds from now.

    `wait_quantiles` holds (probability, wait) points of the wait's distribution,
    increasing in both, e.g. ((0.5, median), (0.95, bound)); P(start within t) is
    interpolated between them (0 before the first point's wait when it is above 0,
    the last probability's level beyond the last point: the bound promises no more).
    """

    wait_median: float
    wait_bound: float
    runtime: float
    staging: float
    wait_quantiles: tuple[tuple[float, float], ...] = ()
    basis: str = ""  # where the wait came from, for the explanation
    # Work queued ahead of a new job at the site, in seconds of the whole site (the
    # queue's processor-seconds over its processors): the load that breaks ties.
    backlog: float = 0.0
    # The factor on 1 + median wait for the site's recent routed outcomes (1: none),
    # kept so that the outcome of this forecast can be scored before it.
    calibration: float = 1.0
    # The walltime projection of the wait on the site's live queue (None without one):
    # the wait history's class for this job, where its wait is recorded once it starts.
    projected_wait: float | None = None
    # The likely wait: the centre of the +-10 min window the start most probably falls in
    # (`WaitHistory.likely`), what a person is told; None: the forecaster gave none.
    wait_likely: float | None = None
    # False when `runtime` is no prediction from this application's runs (the time limit,
    # other applications' runs): it ranks the job, but a person is told "unknown".
    runtime_known: bool = True
    # False: the job would be a guest here that queues, and the site's users have been
    # given less elsewhere than its guests here (guest_ledger.py); it ranks behind home.
    welcome: bool = True
    # The wait if the job has not started within 10 min (`WaitPrediction.if_late`: the
    # second part of a two-part forecast); None: no history has seen a wait that long.
    wait_if_late: float | None = None
    # What the late-wait model knew of the job here (`late_waits.late_features`; None:
    # no model): give it back with the job's wait once it starts here.
    late_features: tuple[float, ...] | None = None
    # The wait history's calibrated 95% bound for the job's class, before the live queue
    # floors it, an account's hold raises it or routed outcomes scale it (None: no history
    # answered): give it back with the job's wait (`WaitPredictor.given`), which is how
    # the bounds are calibrated, in production, the simulator and the evaluation alike.
    class_bound: float | None = None

    def with_backlog(self, backlog: float) -> Forecast:
        """This forecast with another `backlog`: `dataclasses.replace`, cheaper (a pass
        gives a site's forecast again after a commit there moved only its backlog)."""
        return Forecast(self.wait_median, self.wait_bound, self.runtime, self.staging,
                        self.wait_quantiles, self.basis, backlog, self.calibration,
                        self.projected_wait, self.wait_likely, self.runtime_known,
                        self.welcome, self.wait_if_late, self.late_features,
                        self.class_bound)

    def unwelcome(self) -> Forecast:
        """This forecast for a guest the site does not take (`welcome` False; rare, so
        `dataclasses.replace` is cheap enough)."""
        return replace(self, welcome=False)

    @property
    def uncalibrated_median(self) -> float:
        """The median wait before the routed outcomes' factor."""
        return (1.0 + self.wait_median) / self.calibration - 1.0

    @property
    def completion(self) -> float:
        """Predicted median completion: staging, then the median wait, then the run."""
        return self.staging + self.wait_median + self.runtime

    @property
    def completion_bound(self) -> float:
        """Completion with the wait at its 95% bound."""
        return self.staging + self.wait_bound + self.runtime

    def p_start_within(self, seconds: float) -> float:
        """P(the job starts within `seconds` of now), from `wait_quantiles`."""
        points = self.wait_quantiles or ((0.5, self.wait_median), (0.95, self.wait_bound))
        if seconds < 0:
            return 0.0
        waits = [w for _, w in points]
        i = bisect_right(waits, seconds)
        if i == 0:
            p0, w0 = points[0]
            return p0 * seconds / w0 if w0 > 0 else p0
        if i == len(points):
            return points[-1][0]
        (p0, w0), (p1, w1) = points[i - 1], points[i]
        return p0 + (p1 - p0) * (seconds - w0) / (w1 - w0) if w1 > w0 else p1

    def p_finish_within(self, seconds: float) -> float:
        """P(staged, started and run within `seconds` of now)."""
        return self.p_start_within(seconds - self.staging - self.runtime)


@dataclass(frozen=True, slots=True)
class Candidate:
    """One site for one job: excluded (and why) or forecast, and what the job would
    cost there (milli-SU; None when not priced: no rate card, or nobody asked)."""

    site: str
    excluded: str | None = None
    forecast: Forecast | None = None
    quote_milli: int | None = None
    # How the job's container image gets there, when the gateway fetches and ships a
    # registry image the site cannot pull (shown by estimate and explain).
    image: str | None = None
    # Why choosing this open site is a last resort (a banned site no other replaces).
    caution: str | None = None
    # The job's home: where it goes without routing (its log's site in the simulator,
    # where its owner's jobs ran last in production). A job leaves home only for a gain
    # its forecasts can vouch for (policies/home_guard.py).
    home: bool = False
    # Open but not forecast: the job cannot finish here before this (seconds from now,
    # `Forecaster.earliest_completion`), later than the sites a pruning policy ranks
    # first and second (`route_pass`); None for every other candidate.
    not_before: float | None = None

    def forecast_at(self, forecast: Forecast) -> Candidate:
        """This candidate with `forecast`: `dataclasses.replace`, at a tenth of its cost
        (a routing pass makes one per job and site)."""
        return Candidate(self.site, self.excluded, forecast, self.quote_milli, self.image,
                         self.caution, self.home)

    def not_forecast(self, bound: float) -> Candidate:
        """This open candidate left unforecast: the job finishes here no sooner than
        `bound` s from now."""
        return Candidate(self.site, self.excluded, None, self.quote_milli, self.image,
                         self.caution, self.home, bound)


@dataclass(frozen=True, slots=True)
class Decision:
    """A routing decision: the chosen sites (best first; more than one when hedged),
    every candidate in ranked order (excluded ones last, in the order given), and a
    sentence saying why. `chosen` is empty when every site was excluded."""

    policy: str
    chosen: tuple[str, ...]
    candidates: tuple[Candidate, ...]
    why: str


def rank(candidates: Iterable[Candidate], policy: str = registry.DEFAULT, hedge: int = 1,
         deadline: float | None = None) -> Decision:
    """Order `candidates` by the registered policy called `policy` and choose the best
    `hedge` of them.

    `deadline` (seconds from now) is required by a policy whose deadline rule says so
    (`deadline`), optional under `cheapest` and ignored by the others. A candidate
    neither excluded nor forecast is a caller's error, unless the policy prunes and it
    says when the job could finish there at the soonest (`not_before`, see `route_pass`):
    such candidates follow the ranked ones, soonest first.
    """
    ranker = registry.policy(policy)  # ValueError: unknown routing policy
    if hedge < 1:
        raise ValueError("hedge must be at least 1")
    given = list(candidates)
    excluded = [c for c in given if c.excluded is not None]
    open_ = [c for c in given if c.excluded is None and c.forecast is not None]
    unforecast = [c for c in given if c.excluded is None and c.forecast is None]
    if unforecast and (not ranker.prunes or hedge > 1 or not open_
                       or any(c.not_before is None for c in unforecast)):
        raise ValueError("every candidate not excluded needs a forecast")
    if ranker.deadline_rule is DeadlineRule.REQUIRED and deadline is None:
        raise ValueError(f"the {policy} policy needs a deadline")
    ordered = ranker.order(open_, deadline)
    chosen = tuple(c.site for c in ordered[:hedge])
    why = _why(ranker, ordered, excluded, chosen, deadline)
    if ordered and ordered[0].caution is not None:
        why = f"{why[:-1]}; {ordered[0].caution}."
    unforecast.sort(key=_not_before)
    return Decision(policy, chosen, tuple(ordered + unforecast + excluded), why)


def _not_before(candidate: Candidate) -> float:
    bound = candidate.not_before
    assert bound is not None
    return bound


def _why(ranker: RoutingPolicy, ordered: Sequence[Candidate], excluded: Sequence[Candidate],
         chosen: tuple[str, ...], deadline: float | None) -> str:
    if not chosen:
        reasons = "; ".join(f"{c.site}: {c.excluded}" for c in excluded) or "no sites"
        return f"No site can run this job ({reasons})."
    return sentence(ranker.why(ordered, deadline), chosen)


def sentence(lead: str, chosen: tuple[str, ...]) -> str:
    """A policy's reason as the decision's sentence: capitalised, the hedge named."""
    if len(chosen) > 1:
        lead += "; hedged over " + ", ".join(f"'{s}'" for s in chosen)
    return lead[0].upper() + lead[1:] + "."


JobT = TypeVar("JobT")
JobT_contra = TypeVar("JobT_contra", contravariant=True)


class Forecaster(Protocol[JobT_contra]):
    """Predicts a job at a site and keeps the load that jobs routed this pass add."""

    def forecast(self, job: JobT_contra, site: str) -> Forecast:
        """The job's forecast at `site`, given everything committed so far."""
        ...

    def commit(self, job: JobT_contra, site: str) -> None:
        """The job will queue at `site`: later forecasts there must count it."""
        ...

    def earliest_completion(self, job: JobT_contra, site: str, walk: bool = False) -> float:
        """A lower bound on `forecast(job, site).completion`, now and after any later
        commit (0: none known): much cheaper than the forecast; with `walk`, tighter
        and dearer, what the forecast would do first."""
        ...


@dataclass(frozen=True, slots=True)
class Routing(Generic[JobT]):
    """One job of a routing pass and its decision."""

    job: JobT
    decision: Decision


def route_pass(jobs: Iterable[JobT], exclusions: Callable[[JobT], Sequence[Candidate]],
               forecaster: Forecaster[JobT], policy_of: Callable[[JobT], tuple[str, int,
                                                                                float | None]],
               ) -> list[Routing[JobT]]:
    """Route `jobs` in order (the caller's priority: oldest first, usually).

    `exclusions(job)` gives every site as a Candidate, with `excluded` set where a hard
    constraint rules it out (no forecast yet) and its quote where it was priced;
    `policy_of(job)` gives (policy, hedge, deadline in seconds from now). The chosen
    sites are committed to the forecaster before the next job is ranked.

    Under a policy that prunes (`fastest`) with no hedge, only the sites that could
    come first or second are forecast (`_best_first`); the others are left unforecast
    with their bound (`Candidate.not_before`). The decision, its sentence and every
    forecast given are those of forecasting every site.
    """
    routed = []
    for job in jobs:
        policy, hedge, deadline = policy_of(job)
        if hedge == 1 and registry.policy(policy).prunes:
            candidates = _best_first(job, exclusions(job), forecaster)
        else:
            candidates = _forecast_open(exclusions(job), job, forecaster)
        decision = rank(candidates, policy, hedge, deadline)
        for site in decision.chosen:
            forecaster.commit(job, site)
        routed.append(Routing(job, decision))
    return routed


def forecast_every_site(candidates: Iterable[Candidate], job: JobT,
                        forecaster: Forecaster[JobT]) -> list[Candidate]:
    """`candidates` with a forecast at every open site a pass left unforecast: to rank
    them again without a site (one of those left may then come first)."""
    return [c.forecast_at(forecaster.forecast(job, c.site)) if c.not_before is not None
            else c for c in candidates]


def _forecast_open(candidates: Iterable[Candidate], job: JobT,
                   forecaster: Forecaster[JobT]) -> list[Candidate]:
    """`candidates` with a forecast at every site no constraint excludes."""
    return [c if c.excluded is not None else c.forecast_at(forecaster.forecast(job, c.site))
            for c in candidates]


def _best_first(job: JobT, given: Sequence[Candidate], forecaster: Forecaster[JobT]
                ) -> list[Candidate]:
    """`given` with a forecast at every open site that could be ranked first or second
    under a pruning policy (the order of `fastest_key`, then the home guard), the others
    left unforecast with their bound.

    Home is forecast first; then the other open sites in the order of their bounds
    (`Forecaster.earliest_completion`), until a bound exceeds what the head of the
    ranking can reach: the second soonest completion among those forecast without a
    home; with one, the second soonest welcome completion (at most home's) while a
    welcome site beats home, else home's completion or the soonest away, whichever is
    later. A site past that finishes later than every site that could lead, follow
    the leader, or make its sentence (a site sooner than the leader that does not
    welcome the job), so ranking it changes nothing that a decision says.
    """
    if sum(c.excluded is None for c in given) <= 2:  # no bound can spare a forecast
        return _forecast_open(given, job, forecaster)
    slots = list(given)
    home = next((i for i, c in enumerate(slots) if c.home and c.excluded is None), None)
    home_completion = math.inf
    if home is not None:
        forecast = forecaster.forecast(job, slots[home].site)
        slots[home] = slots[home].forecast_at(forecast)
        home_completion = forecast.completion
    bounds = sorted((forecaster.earliest_completion(job, c.site), i)
                    for i, c in enumerate(slots) if c.excluded is None and i != home)
    away = [math.inf, math.inf]  # the two soonest completions away, then welcome ones
    welcome = [math.inf, math.inf]
    threshold = math.inf
    for n, (bound, i) in enumerate(bounds):
        if bound > threshold:
            for bound, i in bounds[n:]:
                slots[i] = slots[i].not_forecast(bound)
            break
        walked = forecaster.earliest_completion(job, slots[i].site, walk=True)
        if walked > threshold:
            slots[i] = slots[i].not_forecast(walked)
            continue
        forecast = forecaster.forecast(job, slots[i].site)
        slots[i] = slots[i].forecast_at(forecast)
        _two_soonest(away, forecast.completion)
        if forecast.welcome:
            _two_soonest(welcome, forecast.completion)
        if home is None:
            threshold = away[1]
        elif welcome[0] < home_completion:
            threshold = min(home_completion, welcome[1])
        else:
            threshold = max(home_completion, away[0])
    return slots


def _two_soonest(soonest: list[float], completion: float) -> None:
    if completion < soonest[1]:
        soonest[1] = completion
        if completion < soonest[0]:
            soonest[0], soonest[1] = completion, soonest[0]
