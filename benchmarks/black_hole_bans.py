"""Black-hole bans on real workload logs: today's rule against the rule before it (JSON).

For each log (default: the four shared Parallel Workloads Archive logs in
../shared/traces), `gateway.scheduling.evaluation.ban_eval.evaluate_bans` replays the jobs that
ended, in order, through both rules: the former one (three failures within 120 s of
starting in a row, whoever ran them) exactly, and today's (gateway.scheduling.black_holes:
failures with signs of the site, from two users or two programs) as an upper bound,
reading every quick failure as a sign of the site since a log does not say why a job
failed. The trivial baseline, no bans at all, keeps nothing from anyone and protects no
one from a black hole; the figures say how far each rule is from it.

    nice -n 19 .venv/bin/python benchmarks/black_hole_bans.py [--trace LOG ...]
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
from gateway.scheduling.evaluation.ban_eval import evaluate_bans  # noqa: E402
from gateway.scheduling.swf import iter_jobs  # noqa: E402


def run(log: Path) -> dict[str, Any]:
    began = time.perf_counter()
    result = evaluate_bans(iter_jobs(log))
    return {"log": log.name, **result, "seconds": round(time.perf_counter() - began, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_option(parser)
    args = parser.parse_args()
    print(json.dumps({"logs": each_log(run, args.trace)}, indent=2))


if __name__ == "__main__":
    main()
