"""The simulator's entry points (pure: log files in, figures out), for `gridgate simulate`
and the benchmarks:
- `simulate`: replay one or more SWF logs as a federation of sites under a policy, one
  of `policy_names()`: the simulator's baselines (`BASELINES`, yardsticks no production
  job is routed by), then every registered routing policy a log can feed
  (gateway/scheduling/policies/registry.py, `replayable`), run as production runs it;
- `evaluate_predictions`: walk one log in time order and score production's wait
  forecast against its baselines (gateway/scheduling/evaluation/forecast_eval.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from gateway.scheduling.evaluation.federation.baselines import FEWEST_QUEUED, OWN, FewestQueued, Own
from gateway.scheduling.evaluation.federation.engine import Federation, Policy, Progress, SimResult
from gateway.scheduling.evaluation.federation.metrics import summarize
from gateway.scheduling.evaluation.federation.production_router import Ranked
from gateway.scheduling.evaluation.federation.trace import (
    TraceLog,
    merged_records,
    open_logs,
    windowed,
)
from gateway.scheduling.evaluation.forecast_eval import evaluate_forecasts
from gateway.scheduling.forecaster import COMBINED
from gateway.scheduling.policies import registry
from gateway.scheduling.swf import SwfError, SwfJob, read_header

BASELINES: dict[str, Callable[[], Policy]] = {OWN: Own, FEWEST_QUEUED: FewestQueued}
PROGRESS_EVERY = 20_000


def policy_names() -> tuple[str, ...]:
    """Every policy a simulation can run: the baselines, then the registered routing
    policies a workload log can feed, as the registry has them now."""
    return (*BASELINES, *registry.replayable())


def make_policy(name: str, forecast_mode: str = COMBINED) -> Policy:
    """A fresh policy by its name (one of `policy_names()`); `forecast_mode` is the
    forecaster's for a registered policy (production: `combined`; see forecaster.MODES)."""
    baseline = BASELINES.get(name)
    if baseline is not None:
        return baseline()
    if name in registry.replayable():
        return Ranked(name, forecast_mode)
    raise ValueError(f"unknown policy {name!r}; known: {', '.join(policy_names())}")


def replay(logs: Sequence[TraceLog], policy: str, window_days: float | None = None,
           progress: Progress | None = None, forecast_mode: str = COMBINED,
           start_days: float = 0.0) -> SimResult:
    """The federation of `logs` (log i is site i) replayed under `policy`."""
    federation = Federation([log.spec for log in logs], make_policy(policy, forecast_mode))
    return federation.run(merged_records(logs, window_days, start_days), progress,
                          PROGRESS_EVERY)


def simulate(paths: Sequence[Path], policy: str, window_days: float | None = None,
             progress: Progress | None = None, forecast_mode: str = COMBINED,
             start_days: float = 0.0, scales: Sequence[int] | None = None
             ) -> dict[str, Any]:
    """Figures (`federation.metrics.summarize`) of `paths` replayed under `policy`, plus the
    window and how many jobs of each log could not be replayed. The window starts
    `start_days` after each log's first job; `scales[i]` makes log i's machine (and its
    jobs) that many times larger."""
    logs = open_logs(paths, scales)
    result = replay(logs, policy, window_days, progress, forecast_mode, start_days)
    return summarize(result, policy) | {
        "forecast_mode": None if policy in BASELINES else forecast_mode,
        "window_days": window_days,
        "start_days": start_days,
        "skipped": {log.spec.name: log.skipped for log in logs},
    }


def _counted(jobs: Iterator[SwfJob], progress: Progress | None) -> Iterator[SwfJob]:
    for count, job in enumerate(jobs, start=1):
        if progress is not None and count % PROGRESS_EVERY == 0:
            progress(count, float(job.submit))
        yield job


def evaluate_predictions(path: Path, window_days: float | None = None,
                         progress: Progress | None = None) -> dict[str, Any]:
    """Production's forecast and each baseline's scores on one log, walked in time order.
    A log in which no job logs its wait (and ran) is an SwfError: nothing to score."""
    log = TraceLog(path)
    processors = log.spec.processors
    methods = evaluate_forecasts(_counted(windowed(path, window_days), progress), processors,
                                 site=log.spec.name, clock=read_header(path).clock())
    if not any(method["jobs"] for method in methods.values()):
        raise SwfError(f"{path.name}: no job in it logs its wait, processors and run time "
                       "(-1 is unknown), so no forecast can be scored; `gridgate simulate` "
                       "without --evaluate-predictions replays a log without waits")
    return {"log": log.spec.name, "processors": processors, "window_days": window_days,
            "methods": methods}
