"""Scaling fit t(p) = a0 + a1/p + a2*log p by NNLS, and its held-out evaluation."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from gateway.scheduling.evaluation.scaling_eval import extrapolate, leave_one_out, mape
from gateway.scheduling.prediction.scaling_fit import ScalingFitError, fit_scaling

# Transcribed from the seed papers; each table names its seed file and table number.
TABLES = Path(__file__).parent / "data" / "seed_scaling_tables.json"
PROCS = [1, 2, 4, 8, 16, 32]


def test_exact_data_recovers_known_coefficients() -> None:
    # t(p) = 3 + 120/p + 0.5 ln p: every point lies on the model, so the fit is exact.
    times = [3 + 120 / p + 0.5 * math.log(p) for p in PROCS]
    fit = fit_scaling(PROCS, times)
    assert (fit.a0, fit.a1, fit.a2) == pytest.approx((3.0, 120.0, 0.5), rel=1e-9)
    assert fit.rms_relative_error == pytest.approx(0.0, abs=1e-9)
    assert fit.predict(64) == pytest.approx(3 + 120 / 64 + 0.5 * math.log(64), rel=1e-9)


def test_negative_coefficient_is_clamped_and_the_others_refit() -> None:
    # Exact data with a2 = -2: unconstrained least squares would return it; NNLS sets it
    # to 0 and refits a0, a1 alone. The expected pair is the 2x2 weighted normal equations
    # on rows (1/t, 1/(p t)) against 1 (relative residuals), solved by Cramer's rule.
    times = [50 + 200 / p - 2 * math.log(p) for p in PROCS]
    u = [1 / t for t in times]
    v = [1 / (p * t) for p, t in zip(PROCS, times, strict=True)]
    suu, suv, svv = (
        sum(x * x for x in u),
        sum(x * y for x, y in zip(u, v, strict=True)),
        sum(y * y for y in v),
    )
    su, sv = sum(u), sum(v)
    det = suu * svv - suv * suv
    a0, a1 = (su * svv - sv * suv) / det, (suu * sv - suv * su) / det

    fit = fit_scaling(PROCS, times)
    assert fit.a2 == 0.0
    assert (fit.a0, fit.a1) == pytest.approx((a0, a1), rel=1e-9)
    assert fit.a0 > 0 and fit.a1 > 0
    assert fit.rms_relative_error > 0


def test_fewer_than_three_distinct_counts_refused() -> None:
    with pytest.raises(ScalingFitError, match="at least 3 distinct processor counts, got 2"):
        fit_scaling([4, 8, 8], [10.0, 6.0, 6.1])
    with pytest.raises(ScalingFitError, match="positive"):
        fit_scaling([1, 2, 4], [1.0, 0.0, 0.5])
    with pytest.raises(ScalingFitError, match="3 processor counts but 2 times"):
        fit_scaling([1, 2, 4], [1.0, 0.5])


def test_protocols_hold_out_what_they_predict() -> None:
    times = [3 + 120 / p + 0.5 * math.log(p) for p in PROCS]
    loo = leave_one_out(PROCS, times)
    assert [h.procs for h in loo] == PROCS
    assert mape(loo) == pytest.approx(0.0, abs=1e-6)
    ext = extrapolate(PROCS, times)
    assert [h.procs for h in ext] == [8, 16, 32]
    # Three counts leave nothing to hold out once three are needed for the fit.
    assert leave_one_out([1, 2, 4], times[:3]) == []
    assert mape([]) is None


def test_frontier_on_galaxy_held_out() -> None:
    # Seed 002, Table 6 (FronTier on Galaxy, 4-64 CPUs): the model predicts each held-out
    # count within 15% (issue 12's target); the figures come from the fit, not the test.
    table = next(
        t for t in json.loads(TABLES.read_text())["tables"] if t["id"] == "002-T6-frontier-galaxy"
    )
    assert table["source"].startswith("seed 002_fb0a8f4ab7bd316f.txt, Table 6")
    series = table["series"][0]
    assert series["procs"] == [4, 8, 16, 32, 64]
    assert series["times"] == [11645, 5971, 3310, 2051, 1240]
    held = leave_one_out(series["procs"], series["times"])
    assert len(held) == 5
    value = mape(held)
    assert value is not None and value <= 15.0
    fit = fit_scaling(series["procs"], series["times"])
    assert fit.a1 > 0  # FronTier "scales well" (the paper): a real 1/p part


def test_fit_meets_the_optimality_conditions_on_every_seed_series() -> None:
    # KKT for NNLS: the gradient of the relative squared error is zero along each positive
    # coefficient and non-negative along each zero one. Checked on every transcribed series
    # with three or more counts, noisy ones included (these are where clamping happens).
    clamped = 0
    for table in json.loads(TABLES.read_text())["tables"]:
        for series in table["series"]:
            procs, times = series["procs"], series["times"]
            if len(procs) < 3:
                continue
            fit = fit_scaling(procs, times)
            coef = (fit.a0, fit.a1, fit.a2)
            grad = [0.0, 0.0, 0.0]
            for p, t in zip(procs, times, strict=True):
                basis = (1 / t, 1 / (p * t), math.log(p) / t)
                r = sum(c * b for c, b in zip(coef, basis, strict=True)) - 1
                for j in range(3):
                    grad[j] += 2 * r * basis[j]
            for c, g in zip(coef, grad, strict=True):
                assert c >= 0
                if c > 0:
                    assert g == pytest.approx(0.0, abs=1e-7), series["label"]
                else:
                    assert g >= -1e-7, series["label"]
            clamped += coef.count(0.0)
    assert clamped > 0  # the seed data does exercise the constraint
