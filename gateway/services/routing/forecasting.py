"""The production forecaster of a routing pass: `gateway.scheduling.forecaster.SiteForecaster`
(pure) fed from the database and this pass's site snapshots.

- waits: the site's own records first (imported: gateway.services.routing.history_import), then
  what the gateway observed, each started attempt's submitted_at -> started_at, by site,
  queue, size, time limit, user and the walltime projection the job had when routed
  (`WaitPredictor`, the classes the simulator and the evaluation use);
- routed outcomes: how those waits compared with the median routing forecast for them
  (`RoutedOutcomes`: a site whose forecasts proved optimistic loses its pull);
- the wait if late: the late starts' waits, each with what its decision recorded of the
  job, the queue and the site's clock (`LateWaits`, the one model this process keeps
  between passes: `LATE_WAITS`);
- run times: the finished attempts of the same user and application fingerprint
  (executable and argument count, or the script's digest), scaled between sites by the
  learned or configured relative speed (`RuntimePredictor`);
- the live queue: each site's snapshot of this pass (its cores, every user's running
  jobs with their remaining time and pending jobs in queue order; where there is none,
  the gateway's own attempts there), projected with EASY (`queue_profile`);
- staging: input bytes known now (uploads) over the site's configured transfer rate;
- the guest ledger: rebuilt from the last `guest_ledger.WINDOW` recorded decisions, with
  each job's home (where its owner's jobs ran last), so that a site whose users were
  given less elsewhere than its guests there takes no more guests that would queue.

The histories are rebuilt for each pass from the last `HISTORY` starts: a pass is once
per worker cycle, and the database is the one record every worker shares.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from adapters.snapshot import QueueSnapshot
from gateway.accounting.requested import requested
from gateway.domain.jobspec import Resources
from gateway.domain.states import AttemptState
from gateway.repositories import imported_waits, uploads
from gateway.repositories.jobs import attempts, placements
from gateway.repositories.jobs import outputs as job_outputs
from gateway.repositories.jobs.attempts import StartedAttempt
from gateway.repositories.jobs.placements import GivenForecast
from gateway.repositories.jobs.rows import stored_resources
from gateway.scheduling.forecaster import SiteForecaster
from gateway.scheduling.guest_ledger import GuestLedger
from gateway.scheduling.prediction.late_waits import LateWaits, named_features
from gateway.scheduling.prediction.routed_outcomes import RoutedOutcomes
from gateway.scheduling.prediction.runtime_predictor import RuntimePredictor
from gateway.scheduling.prediction.staging_estimate import TransferRates
from gateway.scheduling.prediction.wait_predictor import JobClass, WaitPredictor
from gateway.scheduling.queues.queue_state import QueueState
from gateway.scheduling.ranking import Forecast
from gateway.scheduling.routing_inputs import JobNeed, SiteState
from gateway.services.routing.placement import Pending
from gateway.services.routing.site_snapshots import SiteSnapshot
from gateway.services.sites.entry import SiteEntry
from gateway.services.sites.registry import SiteRegistry

# Starts read per pass (newest first): the histories' material.
HISTORY = 5000
# The late-wait model of this process: unlike the histories it is kept between passes
# (a fit costs about a second; `LateWaits` refits when enough new late waits are
# known), and each pass gives it the late starts it reads, each kept once (by job and
# site). Every worker process fits its own from the same records.
LATE_WAITS = LateWaits()
# Imported waits read per site and pass (gateway.services.routing.history_import): enough for
# the predictor's windows (about 800 waits per class), few enough for a pass.
IMPORTED = 2000
MB = 1_000_000


def fingerprint(spec: Mapping[str, Any]) -> str:
    """The application a (stored) spec runs, for run-time history: its executable and
    argument count (the shape of the call, not its values), or its script's digest."""
    if spec.get("executable") is not None:
        return f"exe:{spec['executable']}:{len(spec.get('args') or ())}"
    return "script:" + hashlib.sha256(str(spec.get("script") or "").encode()).hexdigest()[:16]


def shape(spec: Mapping[str, Any]) -> tuple[int, float, str]:
    """(cores held while running, time limit in seconds, queue) of a stored spec, from
    its resources alone (`stored_resources`: a pass reads thousands of specs)."""
    return _shape(stored_resources(spec), spec.get("partition"))


def _shape(resources: Resources, partition: str | None) -> tuple[int, float, str]:
    # The cores and walltime the job's quote priced (gateway.accounting.requested).
    asked = requested(resources)
    return asked.cores, float(asked.seconds), str(partition or "")


class PassForecaster:
    """`ranking.Forecaster[Pending]` over a SiteForecaster (which speaks JobNeed)."""

    def __init__(self, inner: SiteForecaster, needs: Mapping[str, JobNeed]) -> None:
        self.inner = inner
        self.needs = needs

    def forecast(self, job: Pending, site: str) -> Forecast:
        """The job's forecast at `site`, counting the jobs committed earlier this pass."""
        return self.inner.forecast(self.needs[job.job_id], site)

    def commit(self, job: Pending, site: str) -> None:
        """The job will queue at `site`."""
        self.inner.commit(self.needs[job.job_id], site)

    def earliest_completion(self, job: Pending, site: str, walk: bool = False) -> float:
        """A lower bound on the job's median completion at `site` (see SiteForecaster)."""
        return self.inner.earliest_completion(self.needs[job.job_id], site, walk)


def recorded_class(start: StartedAttempt, given: GivenForecast | None) -> JobClass:
    """The class a started job's wait is recorded in: the one the forecaster gave it when
    routed (`SiteForecaster.job_class`), rebuilt from its spec and its decision."""
    procs, limit, queue = shape(start.spec)
    return JobClass(start.site_name, queue, procs, limit,
                    None if given is None else given.projected_wait, start.owner_id)


def _histories(session: Session, registry: SiteRegistry
               ) -> tuple[WaitPredictor, RuntimePredictor, RoutedOutcomes]:
    waits = WaitPredictor()
    runtimes = RuntimePredictor({e.name: e.speed for e in registry})
    outcomes = RoutedOutcomes()
    for entry in registry:  # the sites' own records first: they are the older waits
        for past in imported_waits.recent(session, entry.name, IMPORTED):
            waits.observe(JobClass(past.site_name, past.queue, past.procs,
                                   past.time_limit_seconds, user=past.user),
                          past.wait_seconds)
    starts = attempts.recent_starts(session, HISTORY)
    given = placements.given_forecasts(session, {start.job_id for start in starts})
    for start in starts:
        wait = (start.started_at - start.submitted_at).total_seconds()
        # Recorded as the simulator and the evaluation record it (forecaster.job_class):
        # the user's class and the projection the job had when routed; its class's bound
        # that routing gave this site calibrates the predictor's bounds, its median the
        # site's routed outcomes.
        forecast = given.get((start.job_id, start.site_name))
        bound = None if forecast is None else waits.given(forecast.class_bound)
        waits.observe(recorded_class(start, forecast), wait, predicted=bound)
        if forecast is not None:
            outcomes.observe(start.site_name, forecast.uncalibrated_median, wait)
            features = named_features(forecast.late_features)
            if features is not None:
                LATE_WAITS.observe(start.site_name, (start.job_id, start.site_name), features, wait)
        if start.state is AttemptState.COMPLETED and start.ended_at is not None:
            procs, limit, _ = shape(start.spec)
            runtimes.observe(start.owner_id, fingerprint(start.spec), start.site_name, procs,
                             (start.ended_at - start.started_at).total_seconds(), limit)
    return waits, runtimes, outcomes


def _queue(session: Session, entry: SiteEntry, snapshot: SiteSnapshot | None,
           now: datetime) -> QueueState:
    """The site's queue for the forecaster: its snapshot (every user's jobs), else the
    gateway's own attempts there. Other users' jobs run, as far as anyone here can
    predict, to their time limits; a job without one, to the site's longest."""
    shape = entry.shape
    queue = snapshot.queue if snapshot is not None else None
    if queue is None:
        return _own_attempts(session, entry, shape.max_nodes * shape.cores_per_node, now)
    return live_queue(entry, queue)


def live_queue(entry: SiteEntry, queue: QueueSnapshot) -> QueueState:
    """The forecaster's queue of a site from its snapshot: running jobs with what is left
    of their limits, pending jobs in the scheduler's order (as `queue.pending` lists
    them, so an index there is one in `queued`), and each job's Unix account."""
    shape = entry.shape
    capacity = shape.max_nodes * shape.cores_per_node
    longest = float(shape.max_walltime)
    running, queued = [], []
    for job in queue.running:
        limit = float(job.time_limit_seconds or longest)
        ran = (queue.taken_at - job.started_at).total_seconds() if job.started_at else 0.0
        running.append((job.cores or 1, limit - ran, limit - ran))
    for job in queue.pending:
        limit = float(job.time_limit_seconds or longest)
        queued.append((job.cores or 1, limit, limit))
    owners = tuple(job.user for job in (*queue.running, *queue.pending))
    # Never fewer processors than the configuration promises a job (feasibility's shape).
    return QueueState(max(queue.total_cores or 0, capacity), tuple(running), tuple(queued),
                      owners=owners)


def _own_attempts(session: Session, entry: SiteEntry, capacity: int, now: datetime
                  ) -> QueueState:
    running, queued = [], []
    for live in attempts.live_at(session, entry.name):
        procs, limit, _ = shape(live.spec)
        if live.started_at is not None:
            left = limit - (now - live.started_at).total_seconds()
            running.append((procs, left, left))
        else:
            queued.append((procs, limit, limit))
    return QueueState(capacity, tuple(running), tuple(queued))


def guest_ledger(session: Session) -> GuestLedger:
    """The guest ledger as the last `WINDOW` recorded decisions left it (a pass then adds
    its own as it commits them: `SiteForecaster.commit`)."""
    ledger = GuestLedger()
    for home, site, work in placements.recent_guests(session, ledger.window):
        ledger.placed(home, site, work)
    return ledger


def _need(session: Session, registry: SiteRegistry, job: Pending, home: str | None
          ) -> JobNeed:
    spec = job.spec
    procs, limit, queue = _shape(spec.resources, spec.partition)
    inputs = []
    for item in spec.inputs:
        size = 0
        if item.source.startswith("upload:"):
            facts = uploads.facts(session, job.owner_id, item.source.removeprefix("upload:"))
            size = facts.size if facts is not None else 0
        elif item.source.startswith("site://"):
            # A file another job of the owner kept at its site (a workflow's data edge): its
            # size is known, so a step with large inputs leans towards where they are.
            site, slash, path = item.source.removeprefix("site://").partition("/")
            size = job_outputs.kept_size(session, job.owner_id, site, slash + path) or 0
        inputs.append((item.source, size))
    # The fingerprint of the spec as it will be stored: the histories' keys are of those.
    return JobNeed(job.owner_id, fingerprint(spec.model_dump(mode="json")), procs, limit,
                   queue, tuple(inputs), key=job.job_id, home=home,
                   accounts=tuple((entry.name, account) for entry in registry
                                  if (account := entry.account_name(job.owner)) is not None))


def build_forecaster(session: Session, registry: SiteRegistry, jobs: Sequence[Pending],
                     now: datetime, snapshots: Mapping[str, SiteSnapshot] | None = None
                     ) -> PassForecaster:
    """The forecaster for one routing pass (with `snapshots` bound, a
    `placement.ForecasterFactory`)."""
    snapshots = snapshots or {}
    waits, runtimes, outcomes = _histories(session, registry)
    sites = [SiteState(e.name, _queue(session, e, snapshots.get(e.name), now),
                       local_time=now.astimezone(e.timezone)) for e in registry]
    rates = TransferRates(defaults={e.name: e.transfer_rate_mb_s * MB for e in registry})
    homes = attempts.home_sites(session, {job.owner_id for job in jobs})
    return PassForecaster(SiteForecaster(sites, waits, runtimes, rates, outcomes=outcomes,
                                         ledger=guest_ledger(session), late=LATE_WAITS),
                          {job.job_id: _need(session, registry, job, homes.get(job.owner_id))
                           for job in jobs})
