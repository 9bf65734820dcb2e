"""Queue-wait predictors and the EASY engine on real workload logs (prints JSON).

For each log (default: the four shared Parallel Workloads Archive logs):
- `replay`: the log replayed alone on its own machine with FCFS+EASY (requested times as
  estimates): correlation and median absolute error of simulated against logged waits,
  and the replay's wall time (issue 12 target: HPC2N under 2 minutes);
- `predictions`: a walk in time order predicting each job's wait from what was known at
  its submit (gateway/scheduling/evaluation/prediction_eval.py): our predictor (QBETS-style classes,
  calibrated bound, selected median; gateway/scheduling/wait_predictor.py) against
  the walltime-based EASY projection and the rolling last-500 median/p95, same run;
- `targets`: issue 12's predictor targets, each with the measured value and its baseline.

    nice -n 19 .venv/bin/python benchmarks/predictor_evaluation.py [--trace LOG ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.shared_traces import add_trace_option, each_log  # noqa: E402
from gateway.scheduling.evaluation.prediction_eval import evaluate  # noqa: E402
from gateway.scheduling.evaluation.replay_check import replay_against_log  # noqa: E402
from gateway.scheduling.swf import iter_jobs, machine_size, read_header  # noqa: E402

TARGET_COVERAGE = 0.95
TARGET_OVER_EASY = 2.0
TARGET_REPLAY_SECONDS = 120.0


def targets(predictions: dict[str, Any]) -> dict[str, Any]:
    """Issue 12's predictor targets: measured value, what it is compared with, and whether met."""
    qbets, easy, rolling = (predictions[k] for k in ("qbets", "easy_projection", "rolling"))
    width, naive_width = qbets["median_bound_width_s"], rolling["median_bound_width_s"]
    return {
        "bound_coverage": {
            "value": qbets["under_bound"], "target": TARGET_COVERAGE,
            "rolling_p95": rolling["under_bound"],
            "met": qbets["under_bound"] >= TARGET_COVERAGE,
        },
        "bound_width_s": {
            "value": width,
            "rolling_p95": naive_width,
            # A log too short for any bound (fewer than 59 waits) meets nothing.
            "met": width is not None and naive_width is not None and width <= naive_width,
        },
        "within_10min_vs_easy": {
            "value": qbets["within_10min"], "target": TARGET_OVER_EASY * easy["within_10min"],
            # What the whole log's median, known only in hindsight, would have scored.
            "hindsight_median": predictions.get("hindsight_median_within_10min"),
            "met": qbets["within_10min"] >= TARGET_OVER_EASY * easy["within_10min"],
        },
        "within_10min_vs_rolling": {
            "value": qbets["within_10min"], "target": rolling["within_10min"],
            "met": qbets["within_10min"] >= rolling["within_10min"],
        },
    }


def run(log: Path) -> dict[str, Any]:
    header = read_header(log)
    processors = machine_size(log, header)
    began = time.perf_counter()
    replayed = replay_against_log(iter_jobs(log), processors)
    replayed["seconds"] = round(time.perf_counter() - began, 1)
    replayed["target_seconds"] = TARGET_REPLAY_SECONDS
    began = time.perf_counter()
    predictions = evaluate(iter_jobs(log), processors, site=log.name)
    seconds = round(time.perf_counter() - began, 1)
    return {
        "log": log.name,
        "processors": processors,
        "replay": replayed,
        "predictions": predictions | {"seconds": seconds},
        "targets": targets(predictions),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_option(parser)
    args = parser.parse_args()
    results = each_log(run, args.trace)
    print(json.dumps({"logs": results}, indent=2))


if __name__ == "__main__":
    main()
