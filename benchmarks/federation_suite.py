"""Routing on every federation the shared logs make (prints JSON): does it ever hurt?

Issue 27's federations: every subset of two or more of the four shared logs, each over
two different 180-day windows (days 0-180 and 180-360 after each log's first job), and
the four logs with one machine scaled by 10 and by 100 (its processors and its jobs
alike, so machine sizes differ by 10-1,000x). Each federation runs `own` (every job
stays home), `fewest-queued` and `fastest` (production's router); per federation the
script prints the three mean bounded slowdowns, every origin's mean wait under each, and
issue 27's routing targets: `fastest` no worse than `own` and than `fewest-queued`, no
origin's mean wait more than 5% above `own`, and on the four-log federation (first
window) at least a 30% cut against `own`.

    nice -n 19 .venv/bin/python benchmarks/federation_suite.py [--jobs 2]
        [--only SUBSTRING] [--shard I/N] [--window-days 180]

About 40 minutes on one core. `--only` keeps the federations whose label contains it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.shared_traces import add_trace_option, existing_traces  # noqa: E402
from gateway.scheduling.evaluation.federation.baselines import FEWEST_QUEUED, OWN  # noqa: E402
from gateway.scheduling.evaluation.simulation import simulate  # noqa: E402
from gateway.scheduling.policies.fastest import FASTEST  # noqa: E402

POLICIES = (OWN, FEWEST_QUEUED, FASTEST)
MAX_ORIGIN_WAIT_RISE = 0.05
FOUR_LOG_CUT = 0.30
SCALES = (10, 100)
SHORT = {"KTH": "KTH", "CTC": "CTC", "HPC2N": "HPC2N", "SDSC-BLUE": "SDSC"}


@dataclass(frozen=True)
class Federation:
    """One federation of the suite: its logs, their scales and its window."""

    label: str
    paths: tuple[Path, ...]
    scales: tuple[int, ...]
    start_days: float


def _short(path: Path) -> str:
    return next((short for key, short in SHORT.items() if path.name.startswith(key)),
                path.name.split(".")[0])


def federations(paths: list[Path], window_days: float) -> list[Federation]:
    """Every subset of two or more logs over two windows, then the scaled machines."""
    suite = []
    for start in (0.0, window_days):
        for size in range(2, len(paths) + 1):
            for subset in combinations(paths, size):
                label = "+".join(_short(p) for p in subset) + f" days {start:.0f}-" \
                                                               f"{start + window_days:.0f}"
                suite.append(Federation(label, subset, (1,) * size, start))
    for scale in SCALES:
        for index in range(len(paths)):
            scales = tuple(scale if i == index else 1 for i in range(len(paths)))
            label = "+".join(_short(p) + (f"x{s}" if s > 1 else "")
                             for p, s in zip(paths, scales, strict=True))
            suite.append(Federation(f"{label} days 0-{window_days:.0f}", tuple(paths),
                                    scales, 0.0))
    return suite


def run(federation: Federation, window_days: float) -> dict[str, Any]:
    """The three policies on one federation, with issue 27's targets."""
    runs, seconds = {}, {}
    for policy in POLICIES:
        began = time.perf_counter()
        runs[policy] = simulate(list(federation.paths), policy, window_days,
                                start_days=federation.start_days, scales=federation.scales)
        seconds[policy] = round(time.perf_counter() - began, 1)
    result = {"label": federation.label, "sites": {
        name: site["processors"] for name, site in runs[OWN]["sites"].items()},
        "jobs": runs[OWN]["overall"]["jobs"],
        "mean_bounded_slowdown": {p: runs[p]["overall"]["mean_bounded_slowdown"]
                                  for p in POLICIES},
        "origin_mean_wait_s": {name: {p: runs[p]["origins"][name]["mean_wait_s"]
                                      for p in POLICIES}
                               for name in runs[OWN]["origins"]},
        "seconds": seconds} | {
        "targets": targets(runs, federation)}
    bsld = result["mean_bounded_slowdown"]
    worst = result["targets"]["worst_origin_wait_change"]
    print(f"{federation.label}: bsld own {bsld[OWN]} / fewest {bsld[FEWEST_QUEUED]} / fastest "
          f"{bsld[FASTEST]}, worst origin wait "
          f"{'from 0 s' if worst is None else format(worst, '+.0%')}, "
          f"{sum(seconds.values()):.0f} s", file=sys.stderr, flush=True)
    return result


def _change(new: float | None, old: float | None) -> float | None:
    """`new` against `old` as a fraction; None when `old` is 0 and `new` is not: an origin
    whose jobs never waited at home and now wait has risen without bound, not by 0%."""
    if new is None or old is None:
        return 0.0
    if not old:
        return 0.0 if not new else None
    return round(new / old - 1.0, 4)


def targets(runs: dict[str, dict[str, Any]], federation: Federation) -> dict[str, Any]:
    """`fastest` against `own` and `fewest-queued`: slowdown and every origin's wait."""
    bsld = {p: runs[p]["overall"]["mean_bounded_slowdown"] for p in POLICIES}
    rises = {name: _change(origin["mean_wait_s"], runs[OWN]["origins"][name]["mean_wait_s"])
             for name, origin in runs[FASTEST]["origins"].items()}
    worst = None if None in rises.values() else max(r for r in rises.values() if r is not None)
    found = {
        "not_worse_than_own": bsld[FASTEST] <= bsld[OWN],
        "not_worse_than_fewest_queued": bsld[FASTEST] <= bsld[FEWEST_QUEUED],
        "worst_origin_wait_change": worst,  # None: from no wait at home to some
        "origin_waits_hold": worst is not None and worst <= MAX_ORIGIN_WAIT_RISE,
        "cut_vs_own": round(1 - bsld[FASTEST] / bsld[OWN], 4) if bsld[OWN] else 0.0,
    }
    four_logs = len(federation.paths) == 4 and set(federation.scales) == {1}
    if four_logs and federation.start_days == 0:
        found["four_log_cut_met"] = found["cut_vs_own"] >= FOUR_LOG_CUT
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trace_option(parser)
    parser.add_argument("--window-days", type=float, default=180.0)
    parser.add_argument("--jobs", type=int, default=1, help="federations run at once")
    parser.add_argument("--only", default="", help="run the federations whose label has this")
    parser.add_argument("--shard", default="1/1", metavar="I/N",
                        help="run every N-th federation from the I-th (split a run "
                             "between processes or machines; default 1/1: all)")
    args = parser.parse_args()
    paths = existing_traces(args.trace)
    index, count = (int(part) for part in args.shard.split("/"))
    if not 1 <= index <= count:
        parser.error(f"--shard I/N needs 1 <= I <= N, not {args.shard}")
    suite = [f for f in federations(paths, args.window_days)
             if args.only in f.label][index - 1::count]
    began = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        results = list(pool.map(run, suite, [args.window_days] * len(suite)))
    held = {name: sum(bool(r["targets"][name]) for r in results)
            for name in ("not_worse_than_own", "not_worse_than_fewest_queued",
                         "origin_waits_hold")}
    print(json.dumps({"window_days": args.window_days, "federations": len(results),
                      "held": held, "seconds": round(time.perf_counter() - began, 1),
                      "results": results}, indent=2))


if __name__ == "__main__":
    main()
