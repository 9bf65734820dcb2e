"""Runtime scaling model against Extra-P on the seed scaling tables (prints JSON).

Issue 27 item 4: gridgate's `scaling_fit` and Extra-P (the field's tool for empirical
performance models, `extrap` on PyPI) are fitted on exactly the same training points of
the same protocols as benchmarks/runtime_model_evaluation.py (`leave_one_out`,
`extrapolate_smallest_3`, on the series of tests/scheduling/data/seed_scaling_tables.json
with at least four counts) and judged on the same held-out points, beside a yardstick:
perfect linear scaling from the nearest training count, t(p) = t(p0) p0 / p.

Extra-P runs its default single-parameter modeler (PMNF hypothesis search) both as
shipped and with its "Negative exponents" option for strong scaling
(benchmarks/extrap_fit.py); `extrap_best` is, per table and protocol, whichever of the
two has the lower MAPE there (chosen in hindsight, in Extra-P's favour). The target per
table and protocol: gridgate's MAPE no worse than `extrap_best`'s, and at most 15%
wherever either reaches 15%.

Extra-P runs in a subprocess, under this interpreter if it has `extrap` (the
`evaluation` extra: `.venv/bin/pip install -e '.[evaluation]'`), else under the venv
given by --extrap-venv, which is created with `extrap==4.2.5` when it has none:

    nice -n 19 .venv/bin/python benchmarks/runtime_model_vs_extrap.py --extrap-venv /tmp/extrap-venv

--models adds every fit's model (gridgate's coefficients, Extra-P's functions) per series.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.reference_venv import python_with  # noqa: E402
from gateway.scheduling.evaluation.scaling_compare import (  # noqa: E402
    linear_scaling_predictor,
    paired_mape,
    target,
)
from gateway.scheduling.evaluation.scaling_eval import (  # noqa: E402
    Split,
    evaluate,
    extrapolate_splits,
    gridgate_predictor,
    held_out,
    leave_one_out_splits,
)
from gateway.scheduling.prediction.scaling_fit import fit_scaling  # noqa: E402

TABLES = ROOT / "tests" / "scheduling" / "data" / "seed_scaling_tables.json"
EXTRAP_FIT = ROOT / "benchmarks" / "extrap_fit.py"
EXTRAP_REQUIREMENT = "extrap==4.2.5"
TARGET_MAPE_PCT = 15.0
PROTOCOLS = {"leave_one_out": leave_one_out_splits, "extrapolate_smallest_3": extrapolate_splits}
EXTRAP_SIDES = {"extrap_default": "default", "extrap_negative_exponents": "negative_exponents"}


def _rounded(value: float | None) -> float | None:
    """One decimal; None for no figure and for an infinite one (JSON has no infinity)."""
    return None if value is None or not math.isfinite(value) else round(value, 1)


def extrap_python(venv: Path | None) -> str:
    """An interpreter with Extra-P: this one, else `venv` (made and filled if need be)."""
    return python_with("extrap", [EXTRAP_REQUIREMENT], venv,
                       "pass --extrap-venv DIR or install the extra: "
                       ".venv/bin/pip install -e '.[evaluation]'")


def run_extrap(python: str, splits: list[Split]) -> dict[str, Any]:
    """Extra-P's models of every split, fed to benchmarks/extrap_fit.py as JSON."""
    fits = [{"procs": list(s.train_procs), "times": list(s.train_times),
             "predict": list(s.test_procs)} for s in splits]
    done = subprocess.run([python, str(EXTRAP_FIT)], input=json.dumps({"fits": fits}),
                          capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _gridgate_model(split: Split) -> str:
    fit = fit_scaling(split.train_procs, split.train_times)
    return f"{fit.a0:.4g} + {fit.a1:.4g}/p + {fit.a2:.4g}*ln(p)"


def evaluate_table(table: dict[str, Any], extrap_models: dict[str, list[dict[str, Any]]],
                   offset: int, with_models: bool) -> tuple[dict[str, Any], int]:
    """Side-by-side held-out MAPE of one table; `offset` indexes its first split in
    `extrap_models`. Returns the report and the offset past its splits."""
    result: dict[str, Any] = {"source": table["source"], "protocols": {}}
    for name, make_splits in PROTOCOLS.items():
        pooled: dict[str, list[Any]] = {side: [] for side in
                                        ("gridgate", *EXTRAP_SIDES, "linear_scaling")}
        per_series: dict[str, Any] = {}
        for series in table["series"]:
            splits = make_splits(series["procs"], series["times"])
            if not splits:
                continue
            ours = {"gridgate": evaluate(splits, gridgate_predictor),
                    "linear_scaling": evaluate(splits, linear_scaling_predictor)}
            for side, config in EXTRAP_SIDES.items():
                models = extrap_models[config][offset:offset + len(splits)]
                ours[side] = held_out(splits, [m["predicted"] for m in models])
            offset += len(splits)
            figures = paired_mape(ours)
            for side, held in ours.items():
                pooled[side].extend(held)
            entry: dict[str, Any] = {side: _rounded(f.mape_pct) for side, f in figures.items()}
            if with_models:
                entry["models"] = {
                    "gridgate": [_gridgate_model(s) for s in splits],
                    **{side: [m["function"] for m in
                              extrap_models[config][offset - len(splits):offset]]
                       for side, config in EXTRAP_SIDES.items()},
                }
            per_series[series["label"]] = entry
        figures = paired_mape(pooled)
        mapes = {side: f.mape_pct for side, f in figures.items()}
        best = min(EXTRAP_SIDES, key=lambda s: float("inf") if mapes[s] is None else mapes[s])
        check = target(mapes["gridgate"], mapes[best], TARGET_MAPE_PCT)
        result["protocols"][name] = {
            "predictions": figures["gridgate"].predictions,
            "mape_pct": {**{side: _rounded(v) for side, v in mapes.items()},
                         "extrap_best": _rounded(mapes[best])},
            "extrap_best_is": best,
            # Extra-P's strong-scaling terms include log2(p)^-k, infinite at p = 1.
            "non_finite_predictions": {side: f.non_finite for side, f in figures.items()
                                       if f.non_finite},
            "no_worse_than_extrap": check.no_worse,
            "within_target": check.within_limit,
            "met": check.met,
            "per_series_mape_pct": per_series,
        }
    result["met"] = all(p["met"] for p in result["protocols"].values())
    return result, offset


def main() -> None:
    """Fit every side on every split and print the JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extrap-venv", type=Path, default=None,
                        help="venv to run Extra-P in (created with extrap==4.2.5 if needed)")
    parser.add_argument("--models", action="store_true",
                        help="list every fit's model per series")
    args = parser.parse_args()
    tables = json.loads(TABLES.read_text())["tables"]
    # All splits in table, protocol, series order: one Extra-P process fits them all.
    splits = [s for t in tables for make in PROTOCOLS.values() for series in t["series"]
              for s in make(series["procs"], series["times"])]
    extrap = run_extrap(extrap_python(args.extrap_venv), splits)
    report: dict[str, Any] = {
        "extrap_version": extrap["extrap_version"],
        "target_mape_pct": TARGET_MAPE_PCT,
        "tables": {},
    }
    offset = 0
    for table in tables:
        report["tables"][table["id"]], offset = evaluate_table(
            table, extrap["modelers"], offset, args.models)
    report["tables_met"] = sum(t["met"] for t in report["tables"].values())
    report["tables_total"] = len(tables)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
