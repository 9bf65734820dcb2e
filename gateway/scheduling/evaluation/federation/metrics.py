"""Figures of a simulated schedule (pure).

Per job: wait = start - submit; turnaround = wait + run time; bounded slowdown =
max(1, turnaround / max(run time, 10 s)) (Feitelson et al., JSSPP 1997: the bound keeps
very short jobs from dominating the mean). The p95 wait is the nearest-rank 95th
percentile. Utilisation is the processor-seconds used over those available from the
first submit to the last completion (per site: that site's processors over the same
span). Per origin site: the same figures for the jobs of that site's log, wherever they
ran, and the share of them that ran elsewhere.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any

from gateway.scheduling.evaluation.federation.engine import SimResult
from gateway.scheduling.evaluation.federation.replay_check import wait_agreement

BOUNDED_SLOWDOWN_THRESHOLD = 10.0


def bounded_slowdown(wait: float, runtime: float,
                     threshold: float = BOUNDED_SLOWDOWN_THRESHOLD) -> float:
    """max(1, (wait + run) / max(run, threshold))."""
    return max(1.0, (wait + runtime) / max(runtime, threshold))


def nearest_rank(values: Sequence[float], quantile: float) -> float:
    """The nearest-rank `quantile` of `values` (not empty)."""
    ordered = sorted(values)
    return ordered[max(math.ceil(quantile * len(ordered)), 1) - 1]


def figures(waits: Sequence[float], runtimes: Sequence[float]) -> dict[str, Any]:
    """Mean and p95 wait, mean turnaround and mean bounded slowdown (seconds)."""
    count = len(waits)
    if count == 0:
        return {"jobs": 0, "mean_wait_s": None, "p95_wait_s": None,
                "mean_turnaround_s": None, "mean_bounded_slowdown": None}
    return {
        "jobs": count,
        "mean_wait_s": round(math.fsum(waits) / count, 2),
        "p95_wait_s": nearest_rank(waits, 0.95),
        "mean_turnaround_s": round((math.fsum(waits) + math.fsum(runtimes)) / count, 2),
        "mean_bounded_slowdown": round(
            math.fsum(bounded_slowdown(w, r) for w, r in zip(waits, runtimes, strict=True))
            / count, 3),
    }


def summarize(result: SimResult, policy: str) -> dict[str, Any]:
    """Overall, per-origin and per-site figures of a finished replay."""
    sites = result.sites
    waits = [start - job.submit for start, job in zip(result.start, result.jobs, strict=True)]
    runtimes = [truth.runtime for truth in result.truths]
    if not waits:
        return {"policy": policy, "overall": figures([], []), "utilisation": None,
                "origins": {}, "sites": {}}
    first = min(job.submit for job in result.jobs)
    last = max(start + run for start, run in zip(result.start, runtimes, strict=True))
    span = max(last - first, 1.0)
    work = [0.0] * len(sites)
    ran = [0] * len(sites)
    for site, procs, runtime in zip(result.site, result.procs, runtimes, strict=True):
        work[site] += procs * runtime
        ran[site] += 1
    origins: dict[str, Any] = {}
    for index, spec in enumerate(sites):
        own = [k for k, job in enumerate(result.jobs) if job.origin == index]
        away = sum(1 for k in own if result.site[k] != index)
        origins[spec.name] = figures([waits[k] for k in own], [runtimes[k] for k in own]) | {
            "ran_elsewhere": round(away / len(own), 4) if own else 0.0}
    return {
        "policy": policy,
        "overall": figures(waits, runtimes),
        "utilisation": round(math.fsum(work) / (sum(s.processors for s in sites) * span), 4),
        "span_s": span,
        "origins": origins,
        "sites": {spec.name: {"processors": spec.processors, "jobs_run": ran[index],
                              "utilisation": round(work[index] / (spec.processors * span), 4)}
                  for index, spec in enumerate(sites)},
    }


def against_log(result: SimResult) -> dict[str, Any]:
    """Simulated against logged waits, over the jobs whose logged wait is known: Pearson
    correlation, median absolute and signed error, both means (seconds)."""
    pairs = [(start - job.submit, truth.logged_wait) for start, job, truth
             in zip(result.start, result.jobs, result.truths, strict=True)
             if truth.logged_wait >= 0]
    if not pairs:
        raise ValueError("no job has a logged wait to compare with")
    return {**wait_agreement([s for s, _ in pairs], [g for _, g in pairs]),
            "median_error_s": statistics.median(s - g for s, g in pairs)}
