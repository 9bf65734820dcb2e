"""Offline evaluation of the site forecast's wait on a workload log, in time order (pure).

The log is walked with `LogWalk`: at each submit the `SiteForecaster` of production
forecasts the job from the queue as the log says it was (run times predicted by the
runtime predictor from runs already ended) and the waits already known. Every mode
reads the same profiles and histories, so they are scored on the same jobs:
- `history`: the QBETS history without the live queue in its job class;
- `projection`: the live queue alone (median: predicted run times; bound: limits);
- `combined`: the history conditioned on the job's walltime projection (production);
and, as the naive baseline of the shared traces' README, `rolling` (last 500 waits of
the job's size class: median and empirical p95; `prediction_eval.RollingBaseline`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gateway.scheduling.evaluation.log_walk import LogWalk, fingerprint, usable
from gateway.scheduling.evaluation.prediction_eval import RollingBaseline, Tally
from gateway.scheduling.forecaster import COMBINED, MODES, JobNeed, SiteForecaster, SiteState
from gateway.scheduling.swf import SwfJob


def evaluate_forecasts(jobs: Iterable[SwfJob], processors: int, site: str = "log",
                       limit: int | None = None) -> dict[str, Any]:
    """Walk a log (sorted by submit time) and score each mode's wait on every job that ran.

    `limit` stops after that many jobs (a prefix of the log).
    """
    rolling = RollingBaseline()
    walk = LogWalk(site, processors,
                   on_start=lambda job, _: rolling.observe(job.procs, job.wait))
    tallies = {name: Tally() for name in (*MODES, "rolling")}
    scored = 0
    for job in jobs:
        if not usable(job):
            continue
        if limit is not None and scored >= limit:
            break
        scored += 1
        now = float(job.submit)
        walk.advance(now)
        need = JobNeed(str(job.user), fingerprint(job), min(job.procs, processors),
                       walk.limit(job), str(job.queue))
        forecaster = SiteForecaster([SiteState(site, walk.state(now))], walk.waits,
                                    walk.runtimes)
        wait = float(job.wait)
        for mode in MODES:
            forecaster.mode = mode
            forecast = forecaster.forecast(need, site)
            tallies[mode].score(wait, forecast.wait_median, forecast.wait_bound)
        baseline = rolling.predict(job.procs)
        tallies["rolling"].score(wait, *(baseline if baseline else (None, None)))
        # Recorded as production records it: the combined class, the answer it got.
        forecaster.mode = COMBINED
        walk.submit(job, need.time_limit, forecaster.runtime(need, site).seconds,
                    forecaster.job_class(need, site), forecaster.wait_prediction(need, site))
    return {name: tally.report() for name, tally in tallies.items()}
