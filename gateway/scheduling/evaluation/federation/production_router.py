"""The registered routing policies in the simulator: gridgate's own router on simulated
sites (pure). `Ranked` runs any policy of gateway/scheduling/policies/ a workload log
can feed (`registry.replayable()`: `fastest`, the one the benchmarks measure, and any
policy registered since); `Fastest` is `Ranked` under `fastest`.

At each arrival instant the jobs arriving then are routed by `ranking.route_pass`, under
the policy, over a `forecaster.SiteForecaster`: the functions the gateway's routing step
calls. Each site's
snapshot is what a router can know: running jobs (processors, time since their start,
requested time) and queued jobs (processors, requested time), each with the run time
predicted for it when it was routed. The predictors are fed as a gateway feeds them: a
wait when a job starts (`WaitPredictor.observe`, with the walltime projection the job
had at its site when routed), a run time when a job ends (`RuntimePredictor.observe`).
A job's real run time never reaches them before it has ended.

Log identities: a user is (origin log, user number), an application (origin log,
executable number), since the logs number their users and executables independently.
Staging costs nothing: the logs hold no data sizes. The guest ledger (guest_ledger.py)
is kept across passes, as production rebuilds it from its recorded placements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import itemgetter

from gateway.scheduling.evaluation.federation.engine import Policy, SiteView, TraceJob, eligible
from gateway.scheduling.forecaster import COMBINED, SiteForecaster
from gateway.scheduling.guest_ledger import GuestLedger
from gateway.scheduling.policies.fastest import FASTEST
from gateway.scheduling.prediction.routed_outcomes import RoutedOutcomes
from gateway.scheduling.prediction.runtime_predictor import RuntimePredictor
from gateway.scheduling.prediction.wait_predictor import JobClass, WaitPrediction, WaitPredictor
from gateway.scheduling.queues.queue_state import QueueState
from gateway.scheduling.ranking import Candidate, Forecast, route_pass
from gateway.scheduling.routing_inputs import JobNeed, Profiles, SiteState

QUEUE = ""  # a simulated site has one queue
_ACCOUNT = itemgetter(3)


def _key(job: TraceJob) -> str:
    return f"{job.origin}/{job.number}"


def job_need(job: TraceJob, procs: int | None = None, home: str | None = None) -> JobNeed:
    """The router's view of a log job (`procs`: clamped to a site, as the engine does;
    `home`: its log's site)."""
    fingerprint = f"{job.origin}/{job.executable}" if job.executable >= 0 else ""
    return JobNeed(user=_user(job), fingerprint=fingerprint,
                   procs=job.procs if procs is None else procs, time_limit=job.requested,
                   queue=QUEUE, key=_key(job), home=home)


def _user(job: TraceJob) -> str:
    """A log job's user, as the router knows it (users of different logs are distinct)."""
    return f"{job.origin}/{job.user}"


@dataclass(frozen=True, slots=True)
class _Given:
    """What routing predicted for a job at the site chosen for it: the class its wait is
    recorded in when it starts, its class's bound (for the bounds' calibration)
    and the forecast's median wait (for the site's routed outcomes)."""

    known: JobClass
    prediction: WaitPrediction | None
    median: float


class _Recording:
    """The pass's forecaster, noting what each committed job was predicted to do at the
    site chosen for it (needed later: its snapshot entry, its wait's history class)."""

    def __init__(self, inner: SiteForecaster, runtimes: dict[str, float],
                 given: dict[str, _Given]) -> None:
        self.inner = inner
        self.runtimes = runtimes
        self.given = given
        self._forecasts: dict[tuple[str, str], Forecast] = {}

    def forecast(self, job: JobNeed, site: str) -> Forecast:
        forecast = self.inner.forecast(job, site)
        self._forecasts[job.key, site] = forecast
        return forecast

    def earliest_completion(self, job: JobNeed, site: str, walk: bool = False) -> float:
        return self.inner.earliest_completion(job, site, walk)

    def commit(self, job: JobNeed, site: str) -> None:
        # Before `commit`: it places the job, and the placement would then count it. The
        # class is the production forecaster's own (`job_class`), the class bound and
        # the median the forecast's, as production records them.
        forecast = self._forecasts.pop((job.key, site))
        self.given[job.key] = _Given(self.inner.job_class(job, site),
                                     self.inner.waits.given(forecast.class_bound),
                                     forecast.uncalibrated_median)
        self.runtimes[job.key] = self.inner.runtime(job, site).seconds
        self.inner.commit(job, site)


@dataclass(slots=True)
class _Kept:
    """A site's profiles kept from the pass at `at`: valid, once advanced, while the site
    is at `version` (no start, end or routed job since) and before `expires` (the first
    instant a running job reaches its predicted end or its limit, changing the snapshot)."""

    version: int
    at: float
    expires: float
    profiles: Profiles


class Ranked(Policy):
    """The registered routing policy called `policy`, one pass per arrival instant;
    `mode` is the forecaster's (production: `combined`)."""

    def __init__(self, policy: str = FASTEST, mode: str = COMBINED) -> None:
        self.name = policy
        self.mode = mode
        self.waits = WaitPredictor()
        self.runtimes = RuntimePredictor()
        self.outcomes = RoutedOutcomes()
        self.ledger = GuestLedger()
        self._names: list[str] = []
        self._predicted: dict[str, float] = {}  # predicted run time at the chosen site
        # What routing predicted at the chosen site, fed back when the job starts.
        self._given: dict[str, _Given] = {}
        # Per site: events so far (starts, ends, jobs routed there) and the profiles kept.
        self._versions: dict[int, int] = {}
        self._kept: dict[int, _Kept] = {}
        # Per site, its running jobs in start order (the site's own), each as a snapshot
        # reads it: (processors, predicted end, limit's end, account), kept from its start
        # (a site of serial jobs runs hundreds: a snapshot at every arrival reads them).
        self._running: dict[int, dict[str, tuple[int, float, float, str | None]]] = {}

    def _keep(self, now: float, sites: Sequence[SiteView]) -> dict[str, Profiles]:
        """The sites' profiles still valid at `now`, advanced to it (the projection of a
        queue that did not change is the same later: a pure speed-up, same answers)."""
        kept = {}
        for site in sites:
            entry = self._kept.get(site.index)
            if entry is None or entry.version != self._versions.get(site.index, 0) \
                    or now >= entry.expires:
                continue
            for profile in entry.profiles:
                profile.advance(now - entry.at)
            entry.at = now
            kept[site.name] = entry.profiles
        return kept

    def route(self, now: float, jobs: Sequence[TraceJob], sites: Sequence[SiteView]
              ) -> list[int]:
        """Route the instant's jobs in one `route_pass`."""
        self._names = [site.name for site in sites]
        index = {site.name: site.index for site in sites}
        states = [SiteState(site.name, self._snapshot(site, now)) for site in sites]
        kept = self._keep(now, sites)
        inner = SiteForecaster(states, self.waits, self.runtimes, mode=self.mode,
                               outcomes=self.outcomes, profiles=kept, ledger=self.ledger)
        for site, state in zip(sites, states, strict=True):
            if site.name not in kept:
                self._kept[site.index] = _Kept(self._versions.get(site.index, 0), now,
                                               now + state.queue.unchanged_for(),
                                               inner.profiles(site.name))
        forecaster = _Recording(inner, self._predicted, self._given)
        needs = {_key(job): job for job in jobs}

        def exclusions(need: JobNeed) -> list[Candidate]:
            job = needs[need.key]
            fitting = set(eligible(job, sites))
            # Home is the job's own log's site: where it ran without routing.
            return [Candidate(site.name, home=site.index == job.origin)
                    if site.index in fitting else
                    Candidate(site.name, f"{site.processors} processors, fewer than "
                                         f"{need.procs}", home=site.index == job.origin)
                    for site in sites]

        largest = max(site.processors for site in sites)
        # A job bigger than every site runs clamped at its own (federation.eligible).
        batch = [job_need(job, None if job.procs <= largest else sites[job.origin].processors,
                          sites[job.origin].name) for job in jobs]
        routed = route_pass(batch, exclusions, forecaster, lambda _: (self.name, 1, None))
        chosen = [index[r.decision.chosen[0]] for r in routed]
        for site_index in chosen:  # its queue changed: its kept profiles are spent
            self._changed(site_index)
        return chosen

    def _changed(self, site: int) -> None:
        self._versions[site] = self._versions.get(site, 0) + 1

    def _snapshot(self, site: SiteView, now: float) -> QueueState:
        predicted = self._predicted
        on = self._running.get(site.index, {}).values()
        waiting = site.queued()
        running = tuple((procs, predicted_end - now, limit_end - now)
                        for procs, predicted_end, limit_end, _ in on)
        queued = tuple((job.procs, predicted[_key(job)], job.requested) for job in waiting)
        owners = tuple(map(_ACCOUNT, on)) + tuple(job.account for job in waiting)
        return QueueState(site.processors, running, queued, owners=owners)

    def started(self, job: TraceJob, site: int, start: float) -> None:
        """Feed the wait to the history, in the class the job had when routed (its user's
        and its projection's, as production records it), with its class's bound."""
        self._changed(site)
        key = _key(job)
        self._running.setdefault(site, {})[key] = (
            job.procs, start + self._predicted[key], start + job.requested, job.account)
        given = self._given.pop(key)
        wait = start - job.submit
        self.waits.observe(given.known, wait, predicted=given.prediction)
        self.outcomes.observe(self._names[site], given.median, wait)

    def ended(self, job: TraceJob, site: int, start: float, end: float) -> None:
        """Feed the run time to the runtime predictor."""
        self._changed(site)
        need = job_need(job)
        del self._predicted[need.key]
        del self._running[site][need.key]
        self.runtimes.observe(need.user, need.fingerprint, self._names[site], job.procs,
                              end - start, job.requested)


class Fastest(Ranked):
    """Lowest predicted median completion (the 95% bound breaking ties): `fastest`."""

    def __init__(self, mode: str = COMBINED) -> None:
        super().__init__(FASTEST, mode)
