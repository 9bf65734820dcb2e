"""Simulator validation: each workload log replayed alone on its own machine (prints JSON).

For each log (default: the four shared Parallel Workloads Archive logs), the whole log
goes through the federation simulator (gateway/scheduling/evaluation/simulation.py) as a single
site under the `own` policy, i.e. FCFS + EASY on the logged machine's processors with
requested times as estimates; the simulated waits are compared with the logged ones
(Pearson correlation, median absolute and signed error, means) and the replay is timed
(issue 12 target: the 200,000-job HPC2N log under 2 minutes on the 2-core machine).

    nice -n 19 .venv/bin/python benchmarks/simulator_validation.py [--trace LOG ...]
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
from gateway.scheduling.evaluation.federation.baselines import OWN  # noqa: E402
from gateway.scheduling.evaluation.federation.metrics import against_log, summarize  # noqa: E402
from gateway.scheduling.evaluation.federation.trace import TraceLog  # noqa: E402
from gateway.scheduling.evaluation.simulation import replay  # noqa: E402

TARGET_REPLAY_SECONDS = 120.0


def run(path: Path) -> dict[str, Any]:
    log = TraceLog(path)
    began = time.perf_counter()
    result = replay([log], OWN)
    seconds = time.perf_counter() - began
    summary = summarize(result, OWN)
    return {
        "log": log.spec.name,
        "processors": log.spec.processors,
        "jobs": summary["overall"]["jobs"],
        "skipped": log.skipped,
        "simulated_vs_logged": against_log(result),
        "simulated": summary["overall"] | {"utilisation": summary["utilisation"]},
        "replay_seconds": round(seconds, 1),
        "target_replay_seconds": TARGET_REPLAY_SECONDS,
        "replay_target_met": seconds < TARGET_REPLAY_SECONDS,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_option(parser)
    args = parser.parse_args()
    results = each_log(run, args.trace)
    print(json.dumps({"logs": results}, indent=2))


if __name__ == "__main__":
    main()
