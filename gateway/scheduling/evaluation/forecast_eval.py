"""Offline evaluation of production's wait forecast on a workload log, in time order (pure).

The log is walked with `LogWalk`: at each submit the `SiteForecaster` of production
forecasts the job from the queue as the log says it was (run times predicted by the
runtime predictor from runs already ended; processors as requested, what was known at
submit) and the waits already known, and records the job's wait as production records
it. Jobs submitted while nothing starts or ends are forecast as one routing pass
forecasts the jobs it routes to a site: each committed on the site's profiles for the
next (the simulator's rule for kept profiles, `QueueState.unchanged_for`); a start or an
end projects the queue afresh: a projection per event, not per submit. Every method sees
the same jobs (`prediction_scores` says what is counted):
- `combined`: production's median and 95% bound (the history conditioned on the job's
  walltime projection, floored by the live queue: what routing ranks by);
- `likely`: production's likely wait (what a person is told) with the same bound;
- `history`, `projection`: the forecaster's other modes (the history without the live
  queue; the live queue alone: predicted run times for the median, limits for the bound);
- baselines: `zero_wait` ("it starts now"), `easy_walltime` (the walltime EASY
  projection of the live queue, what `sbatch --test-only` answers), `rolling` (last 500
  waits of the job's size class: median and empirical p95) and `rolling_conformal` (the
  same window, its quantile level adapted by adaptive conformal inference);
- the first part of the two-part forecast, P(start within 10 min), scored by its Brier
  score for the forecaster's modes (`Forecast.p_start_within`) and three baselines:
  `zero_wait` (certainty), `easy_walltime` (certainty when the projection says so) and
  `rolling` (the window's share of waits up to 10 min);
- the second part of the two-part forecast, `if_late` (production's wait if the job
  has not started within 10 min: the late-wait model's, fed as production feeds it,
  once it has fitted; the class median before), what it was before the model
  (`class_if_late`: the median of the late waits in the bound's class, always) and its
  baseline `rolling_if_late` (the median of the rolling window's waits over 10 min):
  scored on the jobs that waited over 10 min only, the condition they speak for;
- a reference, not a method: `hindsight_best_point`, for each job the point of the
  methods above nearest its real wait (in log(1 + wait)), chosen knowing the wait: what
  choosing among these points job by job could at best reach.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from gateway.scheduling.evaluation.log_walk import LogWalk, fingerprint, usable
from gateway.scheduling.evaluation.prediction_scores import (
    TEN_MINUTES,
    RollingBaseline,
    RollingConformal,
    Tally,
    job_class,
)
from gateway.scheduling.forecaster import COMBINED, MODES, SiteForecaster
from gateway.scheduling.prediction.late_waits import LateWaits
from gateway.scheduling.queues.queue_state import QueueState
from gateway.scheduling.ranking import Forecast
from gateway.scheduling.routing_inputs import JobNeed, Profiles, SiteState
from gateway.scheduling.swf import SwfJob

BASELINES = ("zero_wait", "easy_walltime", "rolling", "rolling_conformal")
IF_LATE = ("if_late", "class_if_late", "rolling_if_late")
METHODS = (*MODES, "likely", *BASELINES, *IF_LATE)
HINDSIGHT = "hindsight_best_point"
# What a caller of `evaluate_forecasts` is shown of each job at its submit.
Seen = Callable[[SwfJob, JobNeed, QueueState, dict[str, Forecast]], None]


def evaluate_forecasts(jobs: Iterable[SwfJob], processors: int, site: str = "log",
                       limit: int | None = None, on_forecast: Seen | None = None,
                       clock: Callable[[float], datetime] | None = None) -> dict[str, Any]:
    """Walk a log (sorted by submit time) and score every method on every job that ran.

    `limit` stops after that many jobs (a prefix of the log). `on_forecast`, if given,
    is shown each job at its submit with what was known then: the job as the gateway
    knew it, the queue, and the forecast of every mode. `clock` gives the site's time
    at a time of the log (`SwfHeader.clock`; None: the late-wait model is given
    no hour).
    """
    rolling = RollingBaseline()
    conformal = RollingConformal(rolling)
    given: dict[int, float | None] = {}  # job number -> the conformal bound it was given

    def started(job: SwfJob, _: object) -> None:
        conformal.observe(float(job.wait), given.pop(job.number, None))
        rolling.observe(job.submit_procs, float(job.wait))

    walk = LogWalk(site, processors, on_start=started, late=LateWaits())
    tallies = {name: Tally() for name in (*METHODS, HINDSIGHT)}
    scored = 0
    kept: Profiles | None = None  # the profiles of the last submit, with its job committed
    kept_at, kept_until, kept_events = 0.0, 0.0, -1
    for job in jobs:
        if not usable(job):
            continue
        if limit is not None and scored >= limit:
            break
        scored += 1
        now = float(job.submit)
        walk.advance(now)
        procs = min(job.submit_procs, processors)
        need = JobNeed(str(job.user), fingerprint(job), procs, walk.limit(job),
                       str(job.queue))
        where = job_class(procs, need.time_limit)
        state = walk.state(now)
        profiles = None
        if kept is not None and walk.events == kept_events and now < kept_until:
            for profile in kept:
                profile.advance(now - kept_at)
            profiles = {site: kept}
        else:
            kept_until = now + state.unchanged_for()
        local = clock(now) if clock is not None else None
        forecaster = SiteForecaster([SiteState(site, state, local_time=local)], walk.waits,
                                    walk.runtimes, profiles=profiles, late=walk.late)
        wait = float(job.wait)
        points: list[float | None] = []
        made = {}
        for mode in MODES:
            forecaster.mode = mode
            made[mode] = forecast = forecaster.forecast(need, site)
            tallies[mode].score(wait, forecast.wait_median, forecast.wait_bound, where)
            tallies[mode].score_chance(wait, forecast.p_start_within(TEN_MINUTES))
            points.append(forecast.wait_median)
        if on_forecast is not None:
            on_forecast(job, need, state, made)
        # Left in production's mode: what it tells, and how it records the job.
        forecaster.mode = COMBINED
        forecast = made[COMBINED]
        tallies["likely"].score(wait, forecast.wait_likely, forecast.wait_bound, where)
        tallies["zero_wait"].score(wait, 0.0, None, where)
        tallies["zero_wait"].score_chance(wait, 1.0)
        projected = forecast.projected_wait
        tallies["easy_walltime"].score(wait, projected, projected, where)
        tallies["easy_walltime"].score_chance(
            wait, None if projected is None else float(projected <= TEN_MINUTES))
        baseline = rolling.predict(procs)
        rolling_median = baseline[0] if baseline else None
        tallies["rolling"].score(wait, rolling_median, baseline[1] if baseline else None,
                                 where)
        tallies["rolling"].score_chance(wait, rolling.share_within(procs, TEN_MINUTES))
        bound = given[job.number] = conformal.bound(procs)
        tallies["rolling_conformal"].score(wait, rolling_median, bound, where)
        rolling_late = rolling.median_above(procs, TEN_MINUTES)
        given_wait = forecaster.wait_prediction(need, site)
        if wait > TEN_MINUTES:
            tallies["if_late"].score(wait, forecast.wait_if_late, None, where)
            tallies["class_if_late"].score(
                wait, given_wait.if_late if given_wait is not None else None, None, where)
            tallies["rolling_if_late"].score(wait, rolling_late, None, where)
        points += [forecast.wait_likely, 0.0, projected, rolling_median,
                   forecast.wait_if_late, rolling_late]
        nearest = min((point for point in points if point is not None),
                      key=lambda point: abs(math.log1p(point) - math.log1p(wait)))
        tallies[HINDSIGHT].score(wait, nearest, None, where)
        walk.submit(job, need.time_limit, forecaster.runtime(need, site).seconds,
                    forecaster.job_class(need, site), walk.waits.given(forecast.class_bound),
                    forecast.late_features)
        forecaster.commit(need, site)
        kept, kept_at, kept_events = forecaster.profiles(site), now, walk.events
    return {name: tally.report() for name, tally in tallies.items()}
