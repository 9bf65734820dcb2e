"""Routing speed: ranking many sites for one job, and a batch routing pass (prints JSON).

Sites are real queues: each shared log (../shared/traces) is walked with
`gateway.scheduling.evaluation.log_walk.LogWalk` for its first `--warmup` jobs (wait and runtime
histories fed as the gateway would, each wait with its walltime projection), and its
queue is snapshotted at instants near the end of that walk. Pending jobs are the jobs
the logs submit next (user, executable, processors, time limit as logged); a site too
small for a job is excluded, as the hard constraints would.

- `rank_100_sites`: 100 snapshot sites (25 per log); per job, a forecast at every site
  and `ranking.rank` (issue 12 target: under 5 ms); baseline in the same run: the same
  job with a fresh EASY projection of each site's queue (`easy.project_runs`, what a
  forecaster without profiles would do);
- `route_pass`: 10,000 pending jobs over 3 sites (KTH, CTC, SDSC-BLUE snapshots),
  `ranking.route_pass` + `SiteForecaster`, profile construction included (target:
  under 1 s); baselines: first fit (today's router: first site big enough) over the same
  jobs, and the per-job reprojection on the first 50 jobs, scaled to 10,000;
- `route_pass_40_sites`: the same pass over 40 snapshot sites (10 per log; issue 27
  target: under 1 s), with the same baselines.

Every site has a fitted late-wait model, as production's sites have once they have seen
enough late waits (`fitted_late_waits`, outside the timings): each forecast asks it.

Each pass also gives its `oracle` (`oracle()`): the same jobs routed by a pass told which
sites each decision reads (the leader and the runner-up; the leader alone), forecasting
only those: what a pass costs at least with this forecaster; and its `floor`
(`floor()`): the candidates alone, and each kind of job's run time at every open site.
The pass's figures count the forecasts it made per job (under `fastest` it forecasts
only the sites that could come first or second: `ranking.route_pass`).

Each figure is given as wall time and as this process's CPU time: the machine is shared,
and under load the wall time counts other processes' turns too (the load average is
printed with the results).

    nice -n 19 .venv/bin/python benchmarks/routing_speed.py [--only route_pass_40_sites]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import os
import statistics
import sys
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.shared_traces import shared_dir  # noqa: E402
from gateway.scheduling.evaluation.log_walk import LogWalk, fingerprint, usable  # noqa: E402
from gateway.scheduling.forecaster import SiteForecaster  # noqa: E402
from gateway.scheduling.prediction.late_waits import LateWaits  # noqa: E402
from gateway.scheduling.prediction.runtime_predictor import RuntimePredictor  # noqa: E402
from gateway.scheduling.prediction.wait_predictor import JobClass, WaitPredictor  # noqa: E402
from gateway.scheduling.queues.easy import project_runs  # noqa: E402
from gateway.scheduling.queues.queue_profile import QueueProfile  # noqa: E402
from gateway.scheduling.queues.queue_state import QueueState  # noqa: E402
from gateway.scheduling.ranking import (  # noqa: E402
    Candidate,
    Routing,
    rank,
    route_pass,
)
from gateway.scheduling.routing_inputs import JobNeed, SiteState  # noqa: E402
from gateway.scheduling.swf import SwfJob, iter_jobs, machine_size  # noqa: E402

LOGS = {
    "kth": "KTH-SP2-1996-2.1-cln.swf.gz",
    "ctc": "CTC-SP2-1996-3.1-cln.swf.gz",
    "hpc2n": "HPC2N-2002-2.2-cln.swf.gz",
    "sdsc": "SDSC-BLUE-2000-4.2-cln.swf.gz",
}
PASS_SITES = ("kth", "ctc", "sdsc")
SNAPSHOTS_PER_LOG = 25
PASS_40_PER_LOG = 10  # 4 logs x 10 snapshots: issue 27's 40 sites
PARTS = ("rank_100_sites", "route_pass", "route_pass_40_sites")
HISTORY_KEPT = 1000  # waits replayed into each snapshot site's history (> the window)
LATE_ROWS = 100  # late waits each site's late-wait model is fitted on


@dataclasses.dataclass
class Walked:
    """A log walked to its warm-up end: snapshots, histories, and the jobs that follow."""

    walk: LogWalk
    recent: deque[tuple[JobClass, float]]  # its last waits (to seed other site names)
    snapshots: list[QueueState]
    following: Iterator[SwfJob]


def walk_log(path: Path, name: str, warmup: int, runtimes: RuntimePredictor) -> Walked:
    recent: deque[tuple[JobClass, float]] = deque(maxlen=HISTORY_KEPT)
    walk = LogWalk(name, machine_size(path), WaitPredictor(), runtimes,
                   on_start=lambda job, known: recent.append((known, float(job.wait))))
    jobs = (job for job in iter_jobs(path) if usable(job))
    every = max(warmup // (2 * SNAPSHOTS_PER_LOG), 1)
    snapshots = []
    for index, job in enumerate(itertools.islice(jobs, warmup)):
        now = float(job.submit)
        walk.advance(now)
        user, app, procs = walk.need(job)
        limit = walk.limit(job)
        predicted = walk.runtimes.predict(user, app, name, procs, limit).seconds
        state = walk.state(now)
        projected = QueueProfile.project(state, limits_as_runtimes=True).earliest_start(
            min(procs, walk.processors), limit)
        if index >= warmup // 2 and (index - warmup // 2) % every == 0:
            snapshots.append(state)
        walk.submit(job, limit, predicted,
                    JobClass(name, str(job.queue), procs, limit, projected, user))
    return Walked(walk, recent, snapshots[-SNAPSHOTS_PER_LOG:], jobs)


def need_of(walked: Walked, job: SwfJob, index: int) -> JobNeed:
    user, _, procs = walked.walk.need(job)
    return JobNeed(user, fingerprint(job), procs, walked.walk.limit(job), str(job.queue),
                   key=f"{walked.walk.site}-{index}")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def reprojected_wait(state: QueueState, extra: list[tuple[int, float, float]],
                     job: JobNeed, runtime: float) -> float:
    """The baseline: the site's whole queue re-projected with the job at its tail."""
    running = [(p, lim, pred) for p, pred, lim in state.running]
    queued = [(p, lim, pred) for p, pred, lim in (*state.queued, *extra)]
    queued.append((min(job.procs, state.processors), job.time_limit, runtime))
    start = project_runs(state.processors, running, queued, until_index=len(queued) - 1)[-1]
    assert start is not None
    return start


def snapshot_sites(walked: dict[str, Walked], per_log: int
                   ) -> tuple[list[SiteState], WaitPredictor]:
    """`per_log` snapshot sites of each log (its last snapshot first), each seeded with its
    log's recent waits."""
    sites: list[SiteState] = []
    waits = WaitPredictor()
    for name, log in walked.items():
        for i, state in enumerate(log.snapshots[::-1][:per_log]):
            site = name if per_log == 1 else f"{name}-{i:02d}"
            sites.append(SiteState(site, state))
            for cls, wait in log.recent:
                waits.observe(dataclasses.replace(cls, site=site), wait)
    return sites, waits


def fitted_late_waits(sites: list[SiteState], waits: WaitPredictor,
                      runtimes: RuntimePredictor, jobs: list[JobNeed]) -> LateWaits:
    """A late-wait model fitted at every site, as production's is once it has seen enough
    late waits (a routing pass asks it for each forecast's wait if late): fitted, outside
    the timings, on the features of `jobs` forecast at every site they fit, each given a
    wait that grows with its bound (what it learns does not matter here; that it answers
    with grown trees does)."""
    late = LateWaits(minimum=LATE_ROWS)
    forecaster = SiteForecaster(sites, waits, runtimes, late=late)
    known: dict[str, tuple[float, ...]] = {}
    for n, job in enumerate(jobs[:LATE_ROWS * 4]):
        for site in sites:
            if job.procs <= site.queue.processors:
                forecast = forecaster.forecast(job, site.name)
                if forecast.late_features is not None:
                    late.observe(site.name, n, forecast.late_features,
                                 601.0 + forecast.wait_bound * (1 + n % 5))
                    known[site.name] = forecast.late_features
    fitted = sum(late.predict(site, features, None) is not None
                 for site, features in known.items())
    print(f"late-wait model fitted at {fitted} of {len(sites)} sites", file=sys.stderr)
    return late


def rank_many(walked: dict[str, Walked], jobs: list[JobNeed]) -> dict[str, Any]:
    sites, waits = snapshot_sites(walked, SNAPSHOTS_PER_LOG)
    runtimes = walked["kth"].walk.runtimes  # shared by the walks; other sites scale by speed
    late = fitted_late_waits(sites, waits, runtimes, jobs)
    began = time.perf_counter()
    forecaster = SiteForecaster(sites, waits, runtimes, late=late)
    build = time.perf_counter() - began
    timings, cpu, baseline = [], [], []
    for job in jobs:
        began, began_cpu = time.perf_counter(), time.process_time()
        candidates = [Candidate(s.name, None, forecaster.forecast(job, s.name))
                      if job.procs <= s.queue.processors
                      else Candidate(s.name, "too small") for s in sites]
        rank(candidates)
        cpu.append((time.process_time() - began_cpu) * 1000)
        timings.append((time.perf_counter() - began) * 1000)
    for job in jobs[:20]:
        began = time.perf_counter()
        for s in sites:
            if job.procs <= s.queue.processors:
                runtime = runtimes.predict(job.user, job.fingerprint, s.name, job.procs,
                                           job.time_limit).seconds
                reprojected_wait(s.queue, [], job, runtime)
        baseline.append((time.perf_counter() - began) * 1000)
    return {
        "sites": len(sites),
        "jobs": len(jobs),
        "median_queued_per_site": statistics.median(len(s.queue.queued) for s in sites),
        "profiles_build_ms": round(build * 1000, 1),
        "median_ms": round(statistics.median(timings), 3),
        "p99_ms": round(percentile(timings, 0.99), 3),
        "cpu_median_ms": round(statistics.median(cpu), 3),
        "cpu_p99_ms": round(percentile(cpu, 0.99), 3),
        "target_ms": 5.0,
        "met_wall": percentile(timings, 0.99) < 5.0,
        "met_cpu": percentile(cpu, 0.99) < 5.0,
        "baseline_reprojection_median_ms": round(statistics.median(baseline), 1),
        "baseline_jobs": len(baseline),
    }


def pass_of(walked: dict[str, Walked], jobs: list[JobNeed], per_log: int = 1
            ) -> dict[str, Any]:
    sites, waits = snapshot_sites(walked, per_log)
    runtimes = next(iter(walked.values())).walk.runtimes
    size = {s.name: s.queue.processors for s in sites}
    late = fitted_late_waits(sites, waits, runtimes, jobs)

    def exclusions(job: JobNeed) -> list[Candidate]:
        return [Candidate(s, None if job.procs <= p else "too small") for s, p in size.items()]

    began, began_cpu = time.perf_counter(), time.process_time()
    forecaster = SiteForecaster(sites, waits, runtimes, late=late)
    routed = route_pass(jobs, exclusions, forecaster, lambda job: ("fastest", 1, None))
    seconds, cpu = time.perf_counter() - began, time.process_time() - began_cpu

    began = time.perf_counter()
    first_fit = [next((s for s, p in size.items() if job.procs <= p), None) for job in jobs]
    first_fit_seconds = time.perf_counter() - began

    sample = jobs[:50]
    extra: dict[str, list[tuple[int, float, float]]] = {s.name: [] for s in sites}
    began = time.perf_counter()
    for job in sample:
        best = None
        for s in sites:
            if job.procs > s.queue.processors:
                continue
            runtime = runtimes.predict(job.user, job.fingerprint, s.name, job.procs,
                                       job.time_limit).seconds
            start = reprojected_wait(s.queue, extra[s.name], job, runtime)
            if best is None or start + runtime < best[0]:
                best = (start + runtime, s.name, runtime)
        assert best is not None
        extra[best[1]].append((job.procs, best[2], job.time_limit))
    reprojection = (time.perf_counter() - began) * len(jobs) / len(sample)

    return {
        **pass_figures(sites, routed, seconds, cpu),
        "oracle": oracle(walked, per_log, jobs, exclusions, runtimes, routed, late),
        "floor": floor(jobs, exclusions, runtimes),
        "baseline_first_fit_s": round(first_fit_seconds, 4),
        "first_fit_routed": {s.name: first_fit.count(s.name) for s in sites},
        "baseline_reprojection_s": round(reprojection, 1),
        "baseline_reprojection_extrapolated_from_jobs": len(sample),
    }


def pass_figures(sites: list[SiteState], routed: list[Routing[JobNeed]], seconds: float,
                 cpu: float) -> dict[str, Any]:
    chosen = [r.decision.chosen[0] for r in routed if r.decision.chosen]
    forecast = [float(sum(c.forecast is not None for c in r.decision.candidates))
                for r in routed]
    return {
        "forecasts_per_job_mean": round(statistics.fmean(forecast), 2),
        "forecasts_per_job_p90": percentile(forecast, 0.9),
        "open_sites_per_job_mean": round(statistics.fmean(
            sum(c.excluded is None for c in r.decision.candidates) for r in routed), 2),
        "jobs": len(routed),
        "sites": {s.name: {"processors": s.queue.processors, "queued": len(s.queue.queued),
                           "running": len(s.queue.running), "routed": chosen.count(s.name)}
                  for s in sites},
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3),
        "target_s": 1.0,
        "met_wall": seconds < 1.0,
        "met_cpu": cpu < 1.0,
    }


def oracle(walked: dict[str, Walked], per_log: int, jobs: list[JobNeed], exclusions: Any,
           runtimes: RuntimePredictor, routed: list[Routing[JobNeed]], late: LateWaits
           ) -> dict[str, Any]:
    """What a pass costs at least with this forecaster, measured: the same jobs on fresh
    snapshots, each told by an oracle (the pass's own decisions) which open sites its
    decision reads: its candidates (the hard constraints), a forecast at those sites
    only, their ranking, the commit; `first_two`, the leader and the runner-up (what the
    decision and its sentence read without a home); `chosen_only`, the leader alone (no
    sentence, perfect foresight), with the time in its forecasts and in its commits.
    Both give the pass's own choices (checked)."""
    figures: dict[str, Any] = {}
    for name, needed in (("first_two", 2), ("chosen_only", 1)):
        sites, waits = snapshot_sites(walked, per_log)
        told = [{c.site for c in r.decision.candidates[:needed] if c.forecast is not None}
                for r in routed]
        forecasting = committing = 0.0
        began = time.process_time()
        forecaster = SiteForecaster(sites, waits, runtimes, late=late)
        chosen = []
        for job, wanted in zip(jobs, told, strict=True):
            read = [c for c in exclusions(job) if c.site in wanted]
            start = time.process_time()
            read = [c.forecast_at(forecaster.forecast(job, c.site)) for c in read]
            forecasting += time.process_time() - start
            decision = rank(read)
            start = time.process_time()
            forecaster.commit(job, decision.chosen[0])
            committing += time.process_time() - start
            chosen.append(decision.chosen)
        figures[f"oracle_{name}_cpu_s"] = round(time.process_time() - began, 3)
        figures[f"oracle_{name}_forecasts_cpu_s"] = round(forecasting, 3)
        figures[f"oracle_{name}_commits_cpu_s"] = round(committing, 3)
        assert chosen == [r.decision.chosen for r in routed]
    return figures


def floor(jobs: list[JobNeed], exclusions: Any, runtimes: RuntimePredictor
          ) -> dict[str, Any]:
    """What any pass here costs before its forecasts, CPU s: the candidates alone (the
    hard constraints' stage, one `Candidate` per site and job), and every kind of job's
    run time predicted once at each open site (what a bound per site needs)."""
    began = time.process_time()
    for job in jobs:
        exclusions(job)
    candidates = time.process_time() - began
    keys = list(dict.fromkeys((job.user, job.fingerprint, c.site, job.procs, job.time_limit)
                              for job in jobs for c in exclusions(job) if c.excluded is None))
    began = time.process_time()
    for key in keys:
        runtimes.predict(*key)
    return {"candidates_only_cpu_s": round(candidates, 3),
            "run_times_at_every_open_site_cpu_s": round(time.process_time() - began, 3),
            "run_times_predicted": len(keys)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warmup", type=int, default=4000,
                        help="jobs walked per log before the snapshots (default 4000)")
    parser.add_argument("--pending", type=int, default=10_000)
    parser.add_argument("--rank-jobs", type=int, default=300)
    parser.add_argument("--traces", type=Path, default=None,
                        help="the folder of the four shared logs (default: ../shared/traces)")
    parser.add_argument("--only", choices=PARTS, action="append", default=None,
                        help="run only this part (repeatable; default: every part)")
    args = parser.parse_args()
    shared = args.traces or shared_dir()
    missing = [name for name in LOGS.values() if not (shared / name).is_file()]
    if missing:
        sys.exit(f"not in {shared}: {', '.join(missing)}")
    runtimes = RuntimePredictor()  # one for all logs, as the gateway keeps one
    walked = {name: walk_log(shared / file, name, args.warmup, runtimes)
              for name, file in LOGS.items()}
    # Pending jobs: the logs' next jobs, interleaved (each keeps its own log's user ids).
    pending: list[JobNeed] = []
    streams = [(walked[name], walked[name].following) for name in walked]
    index = 0
    while len(pending) < args.pending + args.rank_jobs:
        for log, stream in streams:
            pending.append(need_of(log, next(stream), index))
            index += 1
    rank_jobs, pass_jobs = pending[:args.rank_jobs], pending[args.rank_jobs:][:args.pending]
    parts = {
        "rank_100_sites": lambda: rank_many(walked, rank_jobs),
        "route_pass": lambda: pass_of({n: walked[n] for n in PASS_SITES}, pass_jobs),
        "route_pass_40_sites": lambda: pass_of(walked, pass_jobs, PASS_40_PER_LOG),
    }
    results: dict[str, Any] = {"load_average_1min": round(os.getloadavg()[0], 2),
                               "warmup_jobs_per_log": args.warmup}
    for name in args.only or PARTS:
        results[name] = parts[name]()
    results["load_average_1min_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
