"""Turn pingpong.py's output into a latency/bandwidth table and the two-regime model.

    python report.py stdout.txt        (or read standard input)
    python report.py --json stdout.txt (the same as one JSON document)

Lines that are not ping-pong JSON records (launcher chatter) are skipped.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from gateway.scheduling.evaluation.comm_model import (
    PingPongRow,
    TwoRegimeModel,
    fit_two_regime,
    latency_us,
    peak_bandwidth_mbs,
    pingpong_row,
)

# Seed 004, Table 2: MPI_Send on the Linux cluster of the paper, for comparison.
SEED_MODELS = {
    "Myrinet": (4.02794, 0.00188, 57.43650, 0.00610, "10K"),
    "Ethernet": (16.03866, 0.00578, -21212.75604, 0.07966, "256K"),
}


def parse(lines: Iterable[str]) -> list[PingPongRow]:
    """Ping-pong records from pingpong.py's stdout, in size order."""
    rows = []
    for line in lines:
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            rec = json.loads(line)
            rows.append(pingpong_row(int(rec["bytes"]), int(rec["repetitions"]),
                                     float(rec["half_round_trip_s"])))
        except (ValueError, KeyError, TypeError):
            continue
    return sorted(rows, key=lambda r: r.nbytes)


def human_bytes(n: int) -> str:
    for unit, size in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n} B"


def table(rows: list[PingPongRow], model: TwoRegimeModel | None) -> str:
    head = (f"{'size':>9}  {'bytes':>8}  {'reps':>6}  {'time (us)':>10}  "
            f"{'MB/s':>9}  {'model (us)':>10}")
    out = [head, "-" * len(head)]
    for r in rows:
        predicted = f"{model.predict(r.nbytes):10.2f}" if model else f"{'-':>10}"
        out.append(f"{human_bytes(r.nbytes):>9}  {r.nbytes:>8}  {r.repetitions:>6}  "
                   f"{r.time_us:>10.2f}  {r.bandwidth_mbs:>9.1f}  {predicted}")
    return "\n".join(out)


def line(intercept: float, slope: float) -> str:
    sign = "-" if slope < 0 else "+"
    return f"{intercept:.4f} {sign} {abs(slope):.6f} * n"


def describe(model: TwoRegimeModel) -> str:
    return "\n".join([
        "Two-regime model (seed 004, Tables 2-3); t in microseconds, n in bytes:",
        f"  t(n) = {line(model.a0, model.a1)}   for n <= {model.threshold}",
        f"  t(n) = {line(model.b0, model.b1)}   for n >  {model.threshold}",
        f"  threshold: between {human_bytes(model.threshold)} and "
        f"{human_bytes(model.first_above)}; RMS relative error "
        f"{100 * model.rmse:.1f} % over {model.points} sizes",
        f"  large-message bandwidth 1/b1 = {model.asymptotic_bandwidth_mbs:.1f} MB/s",
    ])


def summary(rows: list[PingPongRow], model: TwoRegimeModel | None) -> dict[str, Any]:
    return {
        "rows": [{"bytes": r.nbytes, "repetitions": r.repetitions, "time_us": r.time_us,
                  "bandwidth_mbs": r.bandwidth_mbs} for r in rows],
        "latency_us": latency_us(rows),
        "peak_bandwidth_mbs": peak_bandwidth_mbs(rows),
        "model": None if model is None else {
            "a0": model.a0, "a1": model.a1, "b0": model.b0, "b1": model.b1,
            "threshold": model.threshold, "first_above": model.first_above,
            "rmse_relative": model.rmse, "rmse_us": model.rmse_us,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", help="pingpong.py output (default: stdin)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    source: TextIO = open(args.file, encoding="utf-8") if args.file else sys.stdin  # noqa: SIM115
    with source:
        rows = parse(source)
    if not rows:
        print("report: no ping-pong records found in the input", file=sys.stderr)
        return 1
    # Three sizes per side at least: two points always fit a line exactly, which
    # would make a short regime look perfect.
    model = fit_two_regime([r.nbytes for r in rows], [r.time_us for r in rows],
                           min_points=3) if len(rows) >= 6 else None
    if args.json:
        print(json.dumps(summary(rows, model), indent=2))
        return 0
    print(table(rows, model))
    print()
    print(f"Latency (0 B, half round trip): {latency_us(rows):.2f} us; "
          f"peak bandwidth: {peak_bandwidth_mbs(rows):.1f} MB/s")
    print()
    if model is not None:
        print(describe(model))
        print()
    print("For comparison, seed 004 Table 2 (MPI_Send, 2001 Linux cluster):")
    for name, (a0, a1, b0, b1, n_bar) in SEED_MODELS.items():
        print(f"  {name:<8} a0={a0} a1={a1} b0={b0} b1={b1} threshold={n_bar}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
