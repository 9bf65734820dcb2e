"""Routing policies on a federation of real workload logs (prints JSON).

The four shared Parallel Workloads Archive logs become four sites (KTH 100, CTC 338,
HPC2N 240, SDSC-BLUE 1,152 processors), each FCFS + EASY, fed with the first
`--window-days` (default 180) of its log; jobs keep their submit times relative to
their log's start and may run at any site big enough
(gateway/scheduling/evaluation/federation/engine.py).
Policies: `own` (every job stays home), `fewest-queued`, and `fastest` (gridgate's router:
ranking.route_pass over forecaster.SiteForecaster) with each forecast mode: `combined`
(production), `history`, `projection`.

Issue 12's routing targets, per `fastest` mode: mean bounded slowdown at least 30% below
`own` and 10% below `fewest-queued`, and no site's own jobs with a mean wait more than 5%
above their wait under `own`.

    nice -n 19 .venv/bin/python benchmarks/federation_evaluation.py [--trace LOG ...]
        [--window-days 180] [--modes combined,history,projection]
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

from benchmarks.shared_traces import add_trace_option, existing_traces  # noqa: E402
from gateway.scheduling.evaluation.federation.baselines import FEWEST_QUEUED, OWN  # noqa: E402
from gateway.scheduling.evaluation.simulation import simulate  # noqa: E402
from gateway.scheduling.forecaster import MODES  # noqa: E402
from gateway.scheduling.policies.fastest import FASTEST  # noqa: E402

CUT_VS_OWN = 0.30
CUT_VS_FEWEST_QUEUED = 0.10
MAX_OWN_WAIT_RISE = 0.05


def _change(new: float, old: float) -> float:
    return round(new / old - 1.0, 4) if old else 0.0


def targets(fastest: dict[str, Any], own: dict[str, Any], fewest: dict[str, Any]
            ) -> dict[str, Any]:
    """Issue 12's routing targets for one `fastest` run: measured, baseline, met."""
    bsld = fastest["overall"]["mean_bounded_slowdown"]
    own_bsld = own["overall"]["mean_bounded_slowdown"]
    fewest_bsld = fewest["overall"]["mean_bounded_slowdown"]
    waits = {name: {"own_s": own["origins"][name]["mean_wait_s"],
                    "fastest_s": origin["mean_wait_s"],
                    "change": _change(origin["mean_wait_s"], own["origins"][name]["mean_wait_s"])}
             for name, origin in fastest["origins"].items()}
    worst = max(entry["change"] for entry in waits.values())
    return {
        "slowdown_cut_vs_own": {"value": round(1 - bsld / own_bsld, 4), "target": CUT_VS_OWN,
                                "met": 1 - bsld / own_bsld >= CUT_VS_OWN},
        "slowdown_cut_vs_fewest_queued": {
            "value": round(1 - bsld / fewest_bsld, 4), "target": CUT_VS_FEWEST_QUEUED,
            "met": 1 - bsld / fewest_bsld >= CUT_VS_FEWEST_QUEUED},
        "own_jobs_mean_wait_change": {"per_site": waits, "worst": worst,
                                      "target_at_most": MAX_OWN_WAIT_RISE,
                                      "met": worst <= MAX_OWN_WAIT_RISE},
    }


def run(logs: list[Path], policy: str, window: float, mode: str) -> dict[str, Any]:
    began = time.perf_counter()

    def progress(jobs: int, now: float) -> None:
        print(f"{policy} {mode if policy == FASTEST else ''}: {jobs:,} jobs, day "
              f"{now / 86400:.0f}, {time.perf_counter() - began:.0f} s",
              file=sys.stderr, flush=True)

    summary = simulate(logs, policy, window, progress, mode)
    summary["seconds"] = round(time.perf_counter() - began, 1)
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_option(parser)
    parser.add_argument("--window-days", type=float, default=180.0)
    parser.add_argument("--modes", default=",".join(MODES),
                        help="fastest's forecast modes to run, comma-separated")
    args = parser.parse_args()
    modes = args.modes.split(",")
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown:
        sys.exit(f"unknown forecast mode {', '.join(unknown)}; known: {', '.join(MODES)}")
    logs = existing_traces(args.trace)
    own = run(logs, OWN, args.window_days, MODES[0])
    fewest = run(logs, FEWEST_QUEUED, args.window_days, MODES[0])
    fastest = {mode: run(logs, FASTEST, args.window_days, mode) for mode in modes}
    print(json.dumps({
        "window_days": args.window_days,
        "logs": [log.name for log in logs],
        "policies": {OWN: own, FEWEST_QUEUED: fewest} | {
            f"{FASTEST}/{mode}": summary for mode, summary in fastest.items()},
        "targets": {f"{FASTEST}/{mode}": targets(summary, own, fewest)
                    for mode, summary in fastest.items()},
    }, indent=2))


if __name__ == "__main__":
    main()
