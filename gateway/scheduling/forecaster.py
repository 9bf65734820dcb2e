"""Per-site forecasts for ranking: staging + queue wait + run time of a job (pure).

`SiteForecaster` implements `ranking.Forecaster` over a snapshot of every site taken at
the start of a routing pass. Per site it keeps two free-processor profiles of the queue
(`queue_profile.QueueProfile`): a likely one (jobs run their predicted times) and a
walltime one (jobs run to their limits, what `sbatch --test-only` assumes). For a job:
- run time: `RuntimePredictor` (the user's runs of this application, scaled between
  sites by their relative speed), capped by the time limit;
- wait, median and 95% bound: from the QBETS history (`WaitPredictor`) when it has
  enough waits, its job class carrying the user and the walltime projection of the job
  (so the history says how long jobs the queue projected alike really waited), the
  median floored by the likely profile's start (history lags the queue); without
  history, the likely profile's start for the median and the walltime profile's start
  for the bound;
- the likely wait, what a person is told: the history's (`WaitPredictor`, the centre
  of the +-10 min window the start most probably falls in), else the live median; and
  the wait if the job has not started within those 10 min (the history's; none without);
- the bound, raised to when the account's own queue lets the job start
  (`account_queue.py`) where the account's waiting jobs are held although they fit;
- staging: `staging_estimate.staging_seconds` over the measured transfer rates;
- calibration: the median wait scaled by the site's factor for its routed outcomes
  (`routed_outcomes.py`) when the jobs routed there lately waited longer than forecast;
- welcome: away from the job's home, whether the site takes it as a guest
  (`guest_ledger.py`): it starts at once even if every job there runs to its limit, or
  the site's users were given at least its work elsewhere.
`commit` reserves the job on both profiles, so the next job of the pass sees it, and
adds the decision to the guest ledger.

A pass asks many sites about many jobs (10,000 jobs x 40 sites), yet a site changes only
when a job is committed there and jobs repeat (a user's array, the same size and limit):
so the pass keeps what repeats can share (`pass_sites.py`). The profiles keep their
starts (`QueueProfile.earliest_start`), the wait predictor's answers are kept per class
(`WaitPredictor.prediction_key`), and a site keeps each kind of job's last forecast:
given again while the site's profiles have not changed, or while the job's two starts
have not (with the backlog a commit moved replaced), in the same mode. Everything else a
forecast reads is fixed for the pass: the same forecasts, to the last bit, as computing
each afresh (tests/scheduling/test_recorded_pass.py). Under `fastest` a pass forecasts
only the sites that could lead, found by a lower bound on each site's completion that
costs no forecast (`earliest_completion`; `ranking.route_pass`).

Modes (for the evaluation of what helps; production uses `COMBINED`): `HISTORY` drops
the projection from the job class, `PROJECTION` ignores the history.

One forecaster per routing pass (its profiles are that pass's snapshots):

    forecaster = SiteForecaster(
        [SiteState("galaxy", QueueState(512, running=((64, 1800.0, 3600.0),),
                                        queued=((128, 600.0, 7200.0),)))],
        waits, runtimes, TransferRates(defaults={"galaxy": 100e6}))
    routed = route_pass(jobs, exclusions, forecaster, policy_of)  # jobs: JobNeed

Whoever records a started job's wait in `waits` records it in the class the job had
when it was routed (`job_class`), so that histories and forecasts are conditioned
alike, and gives back the bound of that class it was given (`Forecast.class_bound`,
through `WaitPredictor.given`) to calibrate the bounds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from gateway.scheduling.guest_ledger import GuestLedger, guest_work
from gateway.scheduling.pass_sites import Kind, KindForecast, PassSite, Starts, job_kind
from gateway.scheduling.prediction.late_waits import LateWaits, late_features
from gateway.scheduling.prediction.routed_outcomes import RoutedOutcomes
from gateway.scheduling.prediction.runtime_predictor import RuntimeEstimate, RuntimePredictor
from gateway.scheduling.prediction.staging_estimate import TransferRates, staging_seconds
from gateway.scheduling.prediction.wait_points import wait_points
from gateway.scheduling.prediction.wait_predictor import (
    JobClass,
    Key,
    WaitPrediction,
    WaitPredictor,
    wait_class,
)
from gateway.scheduling.ranking import Forecast
from gateway.scheduling.routing_inputs import JobNeed, Profiles, SiteState

COMBINED = "combined"
HISTORY = "history"
PROJECTION = "projection"
MODES = (COMBINED, HISTORY, PROJECTION)


def _conditioned(level: str) -> bool:
    """Whether a history class of the wait predictor is keyed by the live projection."""
    return "projection" in level.split("/")


class SiteForecaster:
    """`ranking.Forecaster` over per-site queue snapshots and the gateway's histories."""

    def __init__(
        self,
        sites: Iterable[SiteState],
        waits: WaitPredictor,
        runtimes: RuntimePredictor,
        rates: TransferRates | None = None,
        mode: str = COMBINED,
        outcomes: RoutedOutcomes | None = None,
        profiles: Mapping[str, Profiles] | None = None,
        ledger: GuestLedger | None = None,
        late: LateWaits | None = None,
    ) -> None:
        """Build each site's profiles from its snapshot (once per routing pass).

        `waits` and `runtimes` are read, never fed (see the module on `job_class`),
        and their answers are kept for the pass; `rates` defaults to no measured
        transfers and the 10 MB/s fallback; `outcomes` (read, never fed) calibrates each
        site's medians on how the jobs routed there lately waited; `profiles`, a site's
        profiles kept from an earlier pass whose queue has not changed since (the
        simulator keeps them: a projection per site and pass is most of its time);
        `ledger`, the guest ledger (fed by `commit`; None: every site welcomes guests);
        `late`, the late-wait model (read; it fits itself when a refit is due), whose
        point replaces the class median as the wait if late where it has one.
        """
        if mode not in MODES:
            raise ValueError(f"unknown forecast mode {mode!r}")
        kept = profiles or {}
        self._sites = {state.name: PassSite(state, kept.get(state.name)) for state in sites}
        self.waits = waits
        self.runtimes = runtimes
        self.rates = rates if rates is not None else TransferRates()
        self.mode = mode
        self.outcomes = outcomes
        self.ledger = ledger
        self.late = late
        self._ledgered: JobNeed | None = None  # the job last counted in the ledger
        self._placed: dict[str, Starts] = {}
        # The histories do not change during a pass: jobs alike share one answer.
        self._predictions: dict[Key, WaitPrediction | None] = {}
        self._runtimes: dict[tuple[str, str, str, int, float], RuntimeEstimate] = {}
        self._last_job: JobNeed | None = None
        self._last_kind: Kind = ("", "", 0, 0.0, "", (), 0)

    def profiles(self, site: str) -> Profiles:
        """The site's profiles as this pass has them (before any commit: to keep)."""
        state = self._sites[site]
        return state.likely, state.walltime

    def runtime(self, job: JobNeed, site: str) -> RuntimeEstimate:
        """The job's predicted run time at `site`."""
        key = (job.user, job.fingerprint, site, job.procs, job.time_limit)
        found = self._runtimes.get(key)
        if found is None:
            found = self._runtimes[key] = self.runtimes.predict(*key)
        return found

    def _place(self, job: JobNeed, site: str) -> Starts:
        placed = self._placed.get(site)
        if placed is not None and placed.job is job:
            return placed
        state = self._sites[site]
        runtime = self.runtime(job, site)
        placed = Starts(job, runtime,
                            state.likely.earliest_start(job.procs, runtime.seconds),
                            state.walltime.earliest_start(job.procs, job.time_limit))
        self._placed[site] = placed
        return placed

    def job_class(self, job: JobNeed, site: str) -> JobClass:
        """The job's class at `site` for the wait predictor: record its wait in this
        class when it starts there (the projection is the one it had when routed)."""
        projected = self._place(job, site).walltime_start if self.mode == COMBINED else None
        return JobClass(site, job.queue, job.procs, job.time_limit, projected, job.user)

    def wait_prediction(self, job: JobNeed, site: str) -> WaitPrediction | None:
        """The wait predictor's own answer for the job at `site` (None: no history yet),
        kept for the pass (jobs alike share it)."""
        known = self.job_class(job, site)
        key = self.waits.prediction_key(known)
        if key not in self._predictions:
            self._predictions[key] = self.waits.predict(known)
        return self._predictions[key]

    def earliest_completion(self, job: JobNeed, site: str, walk: bool = False) -> float:
        """A lower bound on the median completion of the job's forecast at `site`, now and
        after any later commit this pass: staging, then a lower bound on the job's start on
        the site's likely profile (starts only move later as jobs commit), then the run.
        Without `walk`, the last bound found for the job's kind there, else one from the
        profile's floor (`QueueProfile.start_floor`); with it, the start itself (a walk
        of the profile, which the forecast then reuses). 0 in `HISTORY` mode, whose
        median the queue does not floor."""
        if self.mode == HISTORY:
            return 0.0
        state = self._sites[site]
        kind = self._kind_of(job)
        if not walk:
            known = state.floors.get(kind)
            if known is not None:
                return known
        made = state.forecasts.get(kind)
        if made is not None:
            staging = made.forecast.staging
        elif job.inputs or job.output_bytes:
            staging = staging_seconds(site, dict(job.inputs), self.rates, state.cached,
                                      job.output_bytes)
        else:
            staging = 0.0
        runtime = self.runtime(job, site).seconds
        start = (state.likely.earliest_start if walk else state.likely.start_floor)(
            job.procs, runtime)
        # Summed in `Forecast.completion`'s order, so that a tie is never a bound above.
        bound = state.floors[kind] = staging + start + runtime
        return bound

    def forecast(self, job: JobNeed, site: str) -> Forecast:
        """The job's forecast at `site`, counting every job committed this pass, marked
        unwelcome where the job would be a guest the site does not take (module).

        The site must be able to hold the job (feasibility excludes the others first):
        more processors than it has is a ValueError.
        """
        forecast = self._forecast_of_kind(job, site)
        ledger = self.ledger
        if ledger is None or job.home is None or job.home == site:
            return forecast
        projected = forecast.projected_wait
        if (projected if projected is not None else forecast.wait_median) <= 0 \
                or ledger.credit(site) >= job.procs * forecast.runtime:
            return forecast
        return forecast.unwelcome()

    def _forecast_of_kind(self, job: JobNeed, site: str) -> Forecast:
        """The forecast, kept per kind of job (the welcome is not: the ledger moves)."""
        state = self._sites[site]
        self._placed.pop(site, None)  # a new forecast: the site's queue may have changed
        kind = self._kind_of(job)
        made = state.forecasts.get(kind)
        # The evaluation switches modes; a commit may move the account's own queue.
        if made is not None and made.mode == self.mode \
                and made.held == state.held(job.account_at(site)):
            if made.likely_changes != state.likely.changes \
                    or made.walltime_changes != state.walltime.changes:
                placed = self._place(job, site)
                if placed.likely_start != made.likely_start \
                        or placed.walltime_start != made.walltime_start:
                    return self._remake(job, state, placed, kind, made)
                made.likely_changes = state.likely.changes
                made.walltime_changes = state.walltime.changes
            if made.backlog != state.backlog:
                made.forecast = made.forecast.with_backlog(state.backlog)
                made.backlog = state.backlog
            return made.forecast
        return self._remake(job, state, self._place(job, site), kind, None)

    def _kind_of(self, job: JobNeed) -> Kind:
        # A pass asks about one job at every site in turn: its kind is built once.
        if self._last_job is not job:  # held here: its id cannot be reused meanwhile
            self._last_job, self._last_kind = job, job_kind(job)
        return self._last_kind

    def _remake(self, job: JobNeed, state: PassSite, placed: Starts, kind: Kind,
                made: KindForecast | None) -> Forecast:
        projection = wait_class(placed.walltime_start) if self.mode == COMBINED else -1
        if made is not None and made.mode == self.mode and made.projection == projection:
            history = made.history
        else:
            history = None if self.mode == PROJECTION else self.wait_prediction(job, state.name)
        held = state.held(job.account_at(state.name))
        forecast = self._forecast(job, state, placed, history, held)
        state.forecasts[kind] = KindForecast(self.mode, state, placed, forecast, projection,
                                             history, held)
        return forecast

    def _forecast(self, job: JobNeed, state: PassSite, placed: Starts,
                  history: WaitPrediction | None, held: float) -> Forecast:
        """The forecast itself: a function of the job's kind, its two starts, the site's
        backlog, its account's own queue (`held`, the start that queue gives) and what the
        pass holds fixed (histories, rates, outcomes, mode), with `history` the wait
        predictor's answer for the job's class (None in PROJECTION)."""
        site = state.name
        runtime = placed.runtime
        if history is not None:
            median, bound = history.median, max(history.upper_bound, history.median)
            basis = f"history {history.level} ({history.history} waits)"
            if _conditioned(history.level):
                basis += " + live queue"
            if self.mode == COMBINED and placed.likely_start > median:
                # History lags the queue (a wait enters it only once its job starts, and
                # does not move as the jobs of this pass commit): the live projection
                # floors it, or every job of a pass herds onto the site whose history
                # looks short (in the federation simulation that doubled slowdown).
                median = placed.likely_start
                bound = max(bound, median)
                basis += ", floored by the live queue"
        else:
            median = placed.likely_start
            bound = max(placed.walltime_start, median)
            basis = "live queue (no wait history)"
        if_late = history.if_late if history is not None else None
        features = None
        if self.late is not None and history is not None and self.mode == COMBINED:
            when = state.local_time
            features = late_features(
                job.procs, job.time_limit, state.load, placed.walltime_start, median, bound,
                if_late, None if when is None else (when.hour, when.weekday()))
            learned = self.late.predict(site, features,
                                        None if when is None else when.timestamp())
            if learned is not None:
                if_late = learned
        outcomes = self.outcomes
        factor = outcomes.factor(site) if outcomes is not None else 1.0
        if outcomes is not None and factor > 1.0:
            median = (1.0 + median) * factor - 1.0
            if if_late is not None:
                if_late = (1.0 + if_late) * factor - 1.0
            bound = max(bound, median)
            basis += (f", x{factor:.1f} as the last {outcomes.outcomes(site)} jobs routed "
                      "here waited longer than forecast")
        if self.mode == COMBINED and held > bound:
            # Neither history nor profiles see a cap on what one account runs at once.
            bound = held
            basis += ", bound raised: the account's jobs ahead of it are held"
        staging = staging_seconds(site, dict(job.inputs), self.rates, state.cached,
                                  job.output_bytes)
        quantiles = wait_points(history.spread if history is not None else (),
                                max(factor, 1.0), median,
                                (history.quantile if history else 0.95, bound))
        return Forecast(median, bound, runtime.seconds, staging, quantiles,
                        f"{basis}; run time: {runtime.basis}", state.backlog, factor,
                        placed.walltime_start if self.mode == COMBINED else None,
                        history.likely if history is not None and history.likely is not None
                        else median, runtime.known, wait_if_late=if_late,
                        late_features=features,
                        class_bound=history.upper_bound if history is not None else None)

    def commit(self, job: JobNeed, site: str) -> None:
        """The job will queue at `site`: reserve it on both of the site's profiles."""
        placed = self._place(job, site)
        state = self._sites[site]
        state.likely.reserve(job.procs, placed.likely_start, placed.runtime.seconds)
        state.walltime.reserve(job.procs, placed.walltime_start, job.time_limit)
        state.backlog += job.procs * placed.runtime.seconds / state.processors
        del self._placed[site]
        account = state.account(job.account_at(site))
        if account is not None:
            account.add(job.time_limit)
        if self.ledger is not None and self._ledgered is not job:
            # A hedged job is committed at each of its sites, first choice first: it is
            # one decision, counted once, at its first choice (what placements record).
            self.ledger.placed(job.home, site, guest_work(job.procs, placed.runtime.seconds))
            self._ledgered = job
