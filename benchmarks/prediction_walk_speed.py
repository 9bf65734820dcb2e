"""The prediction walk's speed on a long log with deep queues (prints JSON).

Issue 27's target: `gridgate simulate --evaluate-predictions` walks a 450,000-job log
with deep queues in under 10 minutes, the cost per prediction independent of the queue's
length. No shared log is that long, so the walk is given two of them as one site: HPC2N
and SDSC-BLUE, each from its first job, merged in submit order (435,432 jobs that ran)
on a machine of both sizes (1,392 processors), with KTH's first jobs appended until
450,000 are walked. Their queues add up: up to some 2,700 jobs wait at once.

Reported: the whole walk's wall time, and the cost per job by the queue's length when
it was submitted (median and mean per bucket: flat when the cost does not grow with the
queue), beside the baseline of the same walk without a forecast (the queue and the
histories kept, each wait and run time learned: what any walk of this log costs).

    nice -n 19 .venv/bin/python benchmarks/prediction_walk_speed.py [--jobs N]
"""

from __future__ import annotations

import argparse
import dataclasses
import heapq
import json
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Last: an installed gridgate (`pip install .`, GRIDGATE_COMPILE=1 for the compiled
# engine) comes first, so the walk measures the engine installed (the JSON says which).
sys.path.append(str(ROOT))

from benchmarks.shared_traces import existing_traces, shared_dir  # noqa: E402
from gateway.scheduling.evaluation.forecast_eval import evaluate_forecasts  # noqa: E402
from gateway.scheduling.evaluation.log_walk import LogWalk, usable  # noqa: E402
from gateway.scheduling.prediction.wait_predictor import JobClass  # noqa: E402
from gateway.scheduling.queues import easy  # noqa: E402
from gateway.scheduling.swf import SwfJob, iter_jobs, machine_size, read_header  # noqa: E402

TARGET_JOBS = 450_000
TARGET_SECONDS = 600.0
LOGS = ("HPC2N-2002-2.2-cln.swf.gz", "SDSC-BLUE-2000-4.2-cln.swf.gz",
        "KTH-SP2-1996-2.1-cln.swf.gz")
BUCKETS = (0, 10, 100, 300, 1000, 3000)


def _shifted(log: Path, index: int, after: int) -> Iterator[SwfJob]:
    """The log's jobs that ran, from its first submit on, `after` seconds later, with
    users and numbers of their own (one site, several logs' users)."""
    first: int | None = None
    for job in iter_jobs(log):
        if not usable(job):
            continue
        if first is None:
            first = job.submit
        yield dataclasses.replace(job, number=index * 10_000_000 + job.number,
                                  submit=job.submit - first + after,
                                  user=index * 100_000 + job.user)


def merged(logs: list[Path], limit: int) -> tuple[list[SwfJob], int]:
    """The first two logs merged in submit order, the third after them; the processors of
    the first two together."""
    jobs = list(heapq.merge(_shifted(logs[0], 1, 0), _shifted(logs[1], 2, 0),
                            key=lambda job: job.submit))
    end = max(job.start + job.run for job in jobs)
    jobs.extend(_shifted(logs[2], 3, end))
    processors = sum(machine_size(log, read_header(log)) for log in logs[:2])
    return jobs[:limit], processors


def queue_lengths(jobs: list[SwfJob]) -> list[int]:
    """How many jobs waited when each job was submitted (the walk's queue)."""
    starts: list[int] = []
    lengths = []
    for job in jobs:
        while starts and starts[0] < job.submit:
            heapq.heappop(starts)
        lengths.append(len(starts))
        heapq.heappush(starts, job.start)
    return lengths


def timed(jobs: list[SwfJob], costs: list[float], progress: bool = False
          ) -> Iterator[SwfJob]:
    """The jobs, recording the time the walk spent on each (between two pulls); with
    `progress`, saying on stderr how far the walk is every 50,000 jobs."""
    began = last = time.perf_counter()
    for count, job in enumerate(jobs, 1):
        yield job
        now = time.perf_counter()
        costs.append(now - last)
        last = now
        if progress and count % 50_000 == 0:
            print(f"{count:,} of {len(jobs):,} jobs, {now - began:.0f} s", file=sys.stderr,
                  flush=True)


def bare_walk(jobs: list[SwfJob], processors: int) -> float:
    """Seconds of the same walk without a forecast: the queue and the histories kept
    (each wait and run time learned), the queue's state read at each submit."""
    walk = LogWalk("merged", processors)
    began = time.perf_counter()
    for job in jobs:
        now = float(job.submit)
        walk.advance(now)
        walk.state(now)
        limit = walk.limit(job)
        walk.submit(job, limit, limit, JobClass("merged", str(job.queue), job.submit_procs,
                                                limit))
    return time.perf_counter() - began


def by_queue(lengths: list[int], costs: list[float]) -> list[dict[str, Any]]:
    """Cost per job (microseconds) per bucket of queue length."""
    rows = []
    for low, high in zip(BUCKETS, (*BUCKETS[1:], None), strict=True):
        picked = [cost for length, cost in zip(lengths, costs, strict=False)
                  if length >= low and (high is None or length < high)]
        if picked:
            rows.append({"queue": f"{low}-{high - 1}" if high else f"{low}+",
                         "jobs": len(picked),
                         "median_us": round(statistics.median(picked) * 1e6),
                         "mean_us": round(statistics.fmean(picked) * 1e6)})
    return rows


def engine() -> str:
    """Which build of the EASY engine the walk runs (setup.py compiles it on request)."""
    return "pure Python" if Path(easy.__file__).suffix == ".py" else "compiled (mypyc)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=TARGET_JOBS,
                        help=f"walk the first N jobs (default {TARGET_JOBS:,})")
    args = parser.parse_args()
    logs = existing_traces([shared_dir() / name for name in LOGS])
    jobs, processors = merged(logs, args.jobs)
    lengths = queue_lengths(jobs)
    baseline_seconds = bare_walk(jobs, processors)
    costs: list[float] = []
    began = time.perf_counter()
    # The merged site keeps the first log's clock (its jobs start at its time 0).
    evaluate_forecasts(timed(jobs, costs, progress=True), processors, site="merged",
                       clock=read_header(logs[0]).clock())
    seconds = time.perf_counter() - began
    print(json.dumps({
        "jobs": len(jobs), "processors": processors, "engine": engine(),
        "queue": {"mean": round(statistics.fmean(lengths), 1), "max": max(lengths)},
        "walk_seconds": round(seconds, 1), "target_seconds": TARGET_SECONDS,
        "met": len(jobs) >= TARGET_JOBS and seconds < TARGET_SECONDS,
        "per_job_us": round(seconds / len(jobs) * 1e6),
        "by_queue_length": by_queue(lengths, costs),
        "baseline_walk_without_forecasts_seconds": round(baseline_seconds, 1),
    }, indent=2))


if __name__ == "__main__":
    main()
