"""Offline evaluation of the runtime predictor on a workload log, in time order (pure).

At each submit every method predicts with the runs that had ended by then (a run is
known when it ends, as the gateway learns it):
- `predictor`: `RuntimePredictor` keyed by (user, executable) (`log_walk.fingerprint`);
- `predictor_user_only`: the same with the user alone as key (what logs without
  executable numbers give anyway; on CTC it shows what the executable adds);
- `last_two_user`: the mean of the user's last two runs of any size, capped by the
  request (the naive baseline of the shared traces' README; Tsafrir et al. as published);
- `requested`: the user's own time limit (what schedulers plan with).
Scored: jobs that ran (run > 0) with a known request. Figures: the README's accuracy
(mean of min/max of predicted and real), the share within a factor of 2, the median
absolute percentage error, and the MAPE over jobs of at least a minute (a 1-s job
predicted at 10 min would otherwise weigh 600 times as much as a day-long job).
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from gateway.scheduling.evaluation.log_walk import LogWalk, usable
from gateway.scheduling.prediction.runtime_predictor import RuntimePredictor
from gateway.scheduling.prediction.wait_predictor import JobClass
from gateway.scheduling.swf import SwfJob

MAPE_FLOOR = 60.0  # seconds: shorter runs are left out of the MAPE (see module)


@dataclass
class RuntimeTally:
    """Errors of one method over the jobs it predicted."""

    ratios: list[float] = field(default_factory=list)  # min/max of predicted and real
    errors: list[float] = field(default_factory=list)  # |predicted - real| / real
    long_errors: list[float] = field(default_factory=list)  # the same, runs >= a minute
    rules: dict[str, list[float]] = field(default_factory=dict)  # rule -> its jobs' ratios

    def score(self, predicted: float, real: float, rule: str = "") -> None:
        """Count one job (real > 0)."""
        predicted = max(predicted, 1.0)  # a 0-s prediction would have no ratio
        ratio = min(predicted, real) / max(predicted, real)
        self.ratios.append(ratio)
        error = abs(predicted - real) / real
        self.errors.append(error)
        if real >= MAPE_FLOOR:
            self.long_errors.append(error)
        if rule:
            self.rules.setdefault(rule, []).append(ratio)

    def report(self) -> dict[str, Any]:
        """Accuracy, share within 2x, median APE, MAPE (runs of a minute or more) and,
        per rule of the predictor, its jobs and their accuracy."""
        count = max(len(self.ratios), 1)
        report: dict[str, Any] = {
            "jobs": len(self.ratios),
            "accuracy": round(sum(self.ratios) / count, 4),
            "within_factor_2": round(sum(r >= 0.5 for r in self.ratios) / count, 4),
            "median_ape": round(statistics.median(self.errors), 4) if self.errors else None,
            "mape_runs_over_1min": (round(statistics.fmean(self.long_errors), 3)
                                    if self.long_errors else None),
        }
        if self.rules:
            report["rules"] = {
                rule: {"jobs": len(ratios), "accuracy": round(statistics.fmean(ratios), 4)}
                for rule, ratios in sorted(self.rules.items(), key=lambda kv: -len(kv[1]))}
        return report


def _rule(basis: str) -> str:
    # "last 2 runs at 4 processors" -> "last runs at this size"; the counts vary.
    for prefix, name in (("time limit (no", "time limit (no runs)"),
                         ("time limit", "capped at the limit"),
                         ("scaling fit", "scaling fit"),
                         ("last", "last runs at this size" if " at " in basis else "last runs"),
                         ):
        if basis.startswith(prefix):
            if "' x " in basis:
                return name + " (other site)"
            return name + (" (other applications)" if "other applications" in basis else "")
    return basis


def evaluate_runtimes(jobs: Iterable[SwfJob], processors: int, site: str = "log"
                      ) -> dict[str, Any]:
    """Walk a log (sorted by submit time) and score each method on every scored job."""
    by_user = RuntimePredictor()
    user_runs: dict[int, deque[float]] = {}

    def ended(job: SwfJob) -> None:
        if job.run > 0:
            by_user.observe(str(job.user), "", site, job.procs, float(job.run))
            user_runs.setdefault(job.user, deque(maxlen=2)).append(float(job.run))

    walk = LogWalk(site, processors, on_end=ended)
    tallies = {name: RuntimeTally() for name in
               ("predictor", "predictor_user_only", "last_two_user", "requested")}
    for job in jobs:
        if not usable(job):
            continue
        walk.advance(float(job.submit))
        user, app, procs = walk.need(job)
        limit = walk.limit(job)
        ours = walk.runtimes.predict(user, app, site, procs, limit)
        if job.run > 0 and job.requested_time > 0:
            real = float(job.run)
            tallies["predictor"].score(ours.seconds, real, _rule(ours.basis))
            alone = by_user.predict(user, "", site, procs, limit)
            tallies["predictor_user_only"].score(alone.seconds, real, _rule(alone.basis))
            last = user_runs.get(job.user)
            naive = min(sum(last) / len(last), limit) if last else limit
            tallies["last_two_user"].score(naive, real)
            tallies["requested"].score(limit, real)
        walk.submit(job, limit, ours.seconds, JobClass(site, str(job.queue), procs, limit))
    return {name: tally.report() for name, tally in tallies.items()}
