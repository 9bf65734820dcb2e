"""How well the wait of a late job can be told from what is known at its submit: a
learned reference beside production's `if_late` (prints JSON).

Issue 27's long-wait target asks, of the jobs that waited over 10 minutes, for a point
within a factor of 2 of the wait for 1.5x as many jobs as the walltime EASY projection.
Production's point was then the median of the late waits in the job's class, which
missed it on KTH (it is now a learned model of this kind:
gateway/scheduling/prediction/late_waits.py). Was the target out of reach for any
method? This fits a general-purpose learner, LightGBM with its default parameters
(benchmarks/late_wait_fit.py), online on the same walk as `gridgate simulate
--evaluate-predictions` (forecast_eval.py): each job is predicted from what was known
at its submit, by a model fitted on the late waits known by then. What it is given of each job:
- the job: processors (and their share of the machine) and time limit;
- the queue: jobs queued and running, queued work (predicted run times and limits),
  processors busy and the running jobs' remaining predicted work, the owner's queued jobs;
- production's forecast: walltime projection, projection on predicted run times,
  median, bound, wait if late, predicted run time;
- the clock: hour of day and day of week at the site (the log's UnixStartTime and
  TimeZoneString; UTC when it has no zone).
It is a reference, not a method of gridgate's (the gateway does not depend on LightGBM
or numpy): what the information at submit supports, measured with a learner nobody
tuned to these logs. Each share is on the late jobs the reference predicted (from its
first fit on); `gridgate_all_late` is production's on every late job, the figure
benchmarks/predictor_evaluation.py reports and the target is held to, and
`learned_reference_all_late` the reference's on every late job (production's point
before its first fit). Beside them, a ceiling no online method reaches:
`hindsight_*_all_late`, each late job predicted by LightGBM fitted on all the other late
waits of the log, those after it included (late_wait_fit.py).

    nice -n 19 .venv/bin/python benchmarks/late_wait_reference.py --venv /tmp/lgbm-venv
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.reference_venv import python_with  # noqa: E402
from benchmarks.shared_traces import add_trace_option, each_log  # noqa: E402
from gateway.scheduling.evaluation.forecast_eval import evaluate_forecasts  # noqa: E402
from gateway.scheduling.evaluation.prediction_scores import TEN_MINUTES  # noqa: E402
from gateway.scheduling.forecaster import COMBINED, PROJECTION  # noqa: E402
from gateway.scheduling.queues.queue_state import QueueState  # noqa: E402
from gateway.scheduling.ranking import Forecast  # noqa: E402
from gateway.scheduling.routing_inputs import JobNeed  # noqa: E402
from gateway.scheduling.swf import SwfJob, iter_jobs, machine_size, read_header  # noqa: E402

FIT = ROOT / "benchmarks" / "late_wait_fit.py"
REQUIREMENTS = ("lightgbm==4.7.0", "numpy")
LONG_WAITS_OVER_EASY = 1.5
FEATURES = (
    "procs", "machine_share", "time_limit",
    "queued", "running", "queued_work", "queued_limit_work", "busy_procs",
    "running_remaining_work", "owner_queued",
    "walltime_projection", "runtime_projection", "median", "bound", "if_late",
    "runtime",
    "hour", "weekday",
)


def features(job: SwfJob, need: JobNeed, state: QueueState, made: dict[str, Forecast],
             processors: int, clock: Callable[[float], datetime]) -> list[float]:
    """What was known of `job` at its submit, in the order of FEATURES (-1: not known)."""
    forecast = made[COMBINED]
    queued_owners = state.owners[len(state.running):]  # owners: running, then queued
    when = clock(job.submit)
    return [
        need.procs, need.procs / processors, need.time_limit,
        len(state.queued), len(state.running),
        sum(p * run for p, run, _ in state.queued),
        sum(p * limit for p, _, limit in state.queued),
        sum(p for p, _, _ in state.running),
        sum(p * max(left, 0.0) for p, left, _ in state.running),
        sum(owner == need.user for owner in queued_owners),
        -1.0 if forecast.projected_wait is None else forecast.projected_wait,
        made[PROJECTION].wait_median, forecast.wait_median, forecast.wait_bound,
        -1.0 if forecast.wait_if_late is None else forecast.wait_if_late,
        forecast.runtime,
        when.hour, when.weekday(),
    ]


def within_2x(points: list[float | None], waits: list[float]) -> float:
    """The share of jobs whose point is within a factor of 2 of their wait (no point:
    a miss, as prediction_scores counts it)."""
    hits = sum(p is not None and w / 2.0 <= p <= 2.0 * w for p, w in zip(points, waits,
                                                                          strict=True))
    return round(hits / max(len(waits), 1), 4)


def run(log: Path, python: str, refit: int, dropped: frozenset[str]) -> dict[str, Any]:
    header = read_header(log)
    processors = machine_size(log, header)
    clock = header.clock()
    jobs: list[dict[str, Any]] = []
    ours: list[float | None] = []
    easy: list[float | None] = []

    def seen(job: SwfJob, need: JobNeed, state: QueueState, made: dict[str, Forecast]
             ) -> None:
        known = features(job, need, state, made, processors, clock)
        jobs.append({"x": [x for name, x in zip(FEATURES, known, strict=True)
                           if name not in dropped],
                     "submit": job.submit, "start": job.submit + job.wait,
                     "wait": float(job.wait)})
        ours.append(made[COMBINED].wait_if_late)
        easy.append(made[COMBINED].projected_wait)

    began = time.perf_counter()
    evaluate_forecasts(iter_jobs(log), processors, site=log.name, on_forecast=seen,
                       clock=clock)
    walked = time.perf_counter() - began
    done = subprocess.run([python, str(FIT)], input=json.dumps(
        {"features": [f for f in FEATURES if f not in dropped], "refit": refit,
         "jobs": jobs}), capture_output=True,
        text=True, check=True)
    fitted = json.loads(done.stdout)
    late = [i for i, job in enumerate(jobs) if job["wait"] > TEN_MINUTES]
    learned = [i for i in late if fitted["predicted"][i] is not None]
    waits = [jobs[i]["wait"] for i in learned]
    easy_all = within_2x([easy[i] for i in late], [jobs[i]["wait"] for i in late])
    return {
        "log": log.name, "jobs": len(jobs), "late_jobs": len(late),
        "late_jobs_predicted_by_reference": len(learned),
        "within_2x": {
            "learned_reference": within_2x([fitted["predicted"][i] for i in learned], waits),
            "gridgate_if_late": within_2x([ours[i] for i in learned], waits),
            "easy_walltime": within_2x([easy[i] for i in learned], waits),
            "gridgate_all_late": within_2x([ours[i] for i in late],
                                           [jobs[i]["wait"] for i in late]),
            # Every late job: gridgate's point until the reference's first fit.
            "learned_reference_all_late": within_2x(
                [ours[i] if fitted["predicted"][i] is None else fitted["predicted"][i]
                 for i in late], [jobs[i]["wait"] for i in late]),
            "easy_walltime_all_late": easy_all,
            # A ceiling, not a method: each late job told by models that knew the late
            # waits after it too (late_wait_fit.py, hindsight).
            **{f"hindsight_{size}_all_late": within_2x([points[i] for i in late],
                                                       [jobs[i]["wait"] for i in late])
               for size, points in fitted["hindsight"].items()},
            "target_all_late": round(LONG_WAITS_OVER_EASY * easy_all, 4),
        },
        "importance": fitted["importance"], "lightgbm": fitted["lightgbm_version"],
        "refit_every_late_waits": refit, "dropped": sorted(dropped),
        "walk_seconds": round(walked, 1),
        "fit_seconds": round(time.perf_counter() - began - walked, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_option(parser)
    parser.add_argument("--venv", type=Path, default=None,
                        help="venv to run LightGBM in (created with it if need be)")
    parser.add_argument("--refit", type=int, default=500,
                        help="fit again once this many more late waits are known")
    parser.add_argument("--drop", action="append", choices=FEATURES, default=[],
                        help="leave this feature out (repeatable): what it contributes")
    args = parser.parse_args()
    python = python_with("lightgbm", REQUIREMENTS, args.venv, "pass --venv DIR")
    dropped = frozenset(args.drop)
    results = each_log(lambda log: run(log, python, args.refit, dropped), args.trace)
    print(json.dumps({"logs": results}, indent=2))


if __name__ == "__main__":
    main()
