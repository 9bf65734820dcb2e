"""Which wait source helps the site forecast: history, live queue, or both (prints JSON).

For each log (default: the four shared Parallel Workloads Archive logs in
../shared/traces) `gateway.scheduling.evaluation.forecast_eval.evaluate_forecasts` walks the log in
time order and, at each submit, asks production's `SiteForecaster` for the job's wait in
each mode, from the queue as the log says it was and the waits and runs known by then:
`history` (QBETS history alone), `projection` (EASY projection of the live queue alone:
predicted run times for the median, limits for the bound) and `combined` (history
conditioned on the job's walltime projection, a coarser history floored by the live
projection: what production uses), with the rolling last-500 baseline of the traces'
README in the same pass. Per mode: share of jobs whose real wait lies within 10 min and
1 h of the predicted median, share under the 95% bound, the bound's median width.
`best` names the mode that does best on each figure (the narrowest bound among those
that hold for at least 95% of jobs).

    nice -n 19 .venv/bin/python benchmarks/forecast_evaluation.py [--trace LOG ...] [--jobs N]
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
from gateway.scheduling.evaluation.forecast_eval import evaluate_forecasts  # noqa: E402
from gateway.scheduling.forecaster import MODES  # noqa: E402
from gateway.scheduling.swf import iter_jobs, machine_size  # noqa: E402

COVERAGE = 0.95


def best(modes: dict[str, Any]) -> dict[str, str | None]:
    """The mode doing best on each figure (the forecaster's modes only)."""
    ours = {name: modes[name] for name in MODES}
    holding = {n: m for n, m in ours.items()
               if m["under_bound"] >= COVERAGE and m["median_bound_width_s"] is not None}
    return {
        "within_10min": max(ours, key=lambda n: ours[n]["within_10min"]),
        "within_1h": max(ours, key=lambda n: ours[n]["within_1h"]),
        "under_bound": max(ours, key=lambda n: ours[n]["under_bound"]),
        "narrowest_bound_holding_95": (min(holding, key=lambda n: holding[n][
            "median_bound_width_s"]) if holding else None),
    }


def run(log: Path, jobs: int | None) -> dict[str, Any]:
    began = time.perf_counter()
    modes = evaluate_forecasts(iter_jobs(log), machine_size(log), site=log.name, limit=jobs)
    return {"log": log.name, "modes": modes, "best": best(modes),
            "seconds": round(time.perf_counter() - began, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_option(parser)
    parser.add_argument("--jobs", type=int, default=None,
                        help="score only the first N jobs of each log (default: all)")
    args = parser.parse_args()
    results = each_log(lambda log: run(log, args.jobs), args.trace)
    print(json.dumps({"jobs_per_log": args.jobs or "all", "logs": results}, indent=2))


if __name__ == "__main__":
    main()
