"""Runtime predictor on real workload logs, in time order (prints JSON).

For each log (default: the four shared Parallel Workloads Archive logs in
../shared/traces) `gateway.scheduling.evaluation.runtime_eval.evaluate_runtimes` predicts each
job's run time at its submit from the runs ended by then, with the gateway's
`RuntimePredictor` (fingerprint: the user and the log's executable number, where the log
has one; the predictor keeps runs per processor count itself) and, in the same pass, the
baselines: the user's requested time, and the mean of the user's last two runs capped by
the request (the README's naive baseline). Per method: the README's accuracy (mean of
min/max), the share within a factor of 2, the median APE, the MAPE over runs of a minute
or more, and how often each of the predictor's rules answered. No constant is fitted to
any log: the rules and their order come from the method (see runtime_predictor.py).

    nice -n 19 .venv/bin/python benchmarks/runtime_prediction_evaluation.py [--trace LOG ...]
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
from gateway.scheduling.evaluation.runtime_eval import evaluate_runtimes  # noqa: E402
from gateway.scheduling.swf import iter_jobs, machine_size  # noqa: E402


def run(log: Path) -> dict[str, Any]:
    began = time.perf_counter()
    methods = evaluate_runtimes(iter_jobs(log), machine_size(log), site=log.name)
    ours, request, naive = (methods[k] for k in ("predictor", "requested", "last_two_user"))
    return {
        "log": log.name,
        "methods": methods,
        "against_baselines": {
            "within_factor_2": {"predictor": ours["within_factor_2"],
                                "requested": request["within_factor_2"],
                                "last_two_user": naive["within_factor_2"]},
            "mape_runs_over_1min": {"predictor": ours["mape_runs_over_1min"],
                                    "requested": request["mape_runs_over_1min"],
                                    "last_two_user": naive["mape_runs_over_1min"]},
            "beats_requested": ours["within_factor_2"] > request["within_factor_2"],
            "at_least_last_two": ours["accuracy"] >= naive["accuracy"],
        },
        "seconds": round(time.perf_counter() - began, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_option(parser)
    args = parser.parse_args()
    results = each_log(run, args.trace)
    print(json.dumps({"logs": results}, indent=2))


if __name__ == "__main__":
    main()
