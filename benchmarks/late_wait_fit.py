"""Fit LightGBM online to the waits of late jobs (JSON on stdin, JSON on stdout).

Run by benchmarks/late_wait_reference.py under an interpreter that has `lightgbm`
(a venv of its own: the gateway needs neither it nor numpy). It imports no gridgate code.

Input: {"features": [names], "refit": N, "jobs": [{"x": [...], "submit": s, "start": s,
"wait": s}, ...]} in submit order. A job is late when it waited over 10 minutes; the
model learns log(1 + wait) of late jobs with the L1 loss (a conditional median: the
point a factor-of-2 judgement is best served by) and LightGBM's default parameters,
nothing chosen for a log. It is fitted again once `refit` more late waits are known, on
every late wait known by then (jobs started before the submit), so each job is predicted
from the past alone; jobs before the first 200 late waits are known get no prediction.

Also a ceiling no online method reaches (`hindsight`): the late jobs cut into ten runs in
submit order, each run predicted by a model fitted on the late waits of the other nine,
those that came after it included. Twice: with LightGBM's defaults, and at the size of
gridgate's model (16 leaves, 32 bins, 50 trees: boosted_trees.py).

Output: {"lightgbm_version": ..., "predicted": [wait or null per job], "importance":
{name: share of the gain of the last fit}, "hindsight": {"default" | "gridgate_size":
[wait or null per job (null: not late)]}}.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import lightgbm
import numpy as np

TEN_MINUTES = 600.0
FIRST_FIT = 200


def fit_online(features: list[str], jobs: list[dict[str, Any]], refit: int
               ) -> tuple[list[float | None], dict[str, float]]:
    """Each job's predicted wait if late (None before the first fit), and the last fit's
    share of the gain per feature."""
    x = np.array([job["x"] for job in jobs], dtype=float)
    late_starts = sorted((job["start"], i) for i, job in enumerate(jobs)
                         if job["wait"] > TEN_MINUTES)
    # The jobs at which a fit happens: once FIRST_FIT, then each `refit` more late waits
    # are known (started before the job's submit).
    fits: list[tuple[int, int]] = []  # (first job it predicts, late waits it learns)
    known = 0
    for i, job in enumerate(jobs):
        while known < len(late_starts) and late_starts[known][0] < job["submit"]:
            known += 1
        if known >= (fits[-1][1] + refit if fits else FIRST_FIT):
            fits.append((i, known))
    predicted: list[float | None] = [None] * (fits[0][0] if fits else len(jobs))
    model: Any = None
    for n, (first, learned) in enumerate(fits):
        rows = [i for _, i in late_starts[:learned]]
        model = _fit(x[rows], np.log1p([jobs[i]["wait"] for i in rows]), *SIZES["default"])
        until = fits[n + 1][0] if n + 1 < len(fits) else len(jobs)
        predicted += [float(v) for v in np.expm1(model.predict(x[first:until]))]
    if model is None:
        return predicted, {}
    gain = model.feature_importance("gain")
    total = float(sum(gain)) or 1.0
    return predicted, {name: round(float(g) / total, 3)
                       for name, g in zip(features, gain, strict=True)}


def _fit(x: Any, y: Any, params: dict[str, Any], trees: int) -> Any:
    """LightGBM's own API (no scikit-learn), its defaults but for `params` and the L1 loss."""
    return lightgbm.train({"objective": "l1", "verbose": -1, **params},
                          lightgbm.Dataset(x, y), num_boost_round=trees)


HINDSIGHT_RUNS = 10
SIZES: dict[str, tuple[dict[str, Any], int]] = {
    "default": ({}, 100),
    "gridgate_size": ({"num_leaves": 16, "max_bin": 32}, 50),
}


def fit_hindsight(jobs: list[dict[str, Any]]) -> dict[str, list[float | None]]:
    """Each late job's wait as predicted by models that knew every other run of late
    waits, the later ones too (see the module)."""
    late = [i for i, job in enumerate(jobs) if job["wait"] > TEN_MINUTES]
    found: dict[str, list[float | None]] = {}
    if len(late) < HINDSIGHT_RUNS:
        return found
    x = np.array([jobs[i]["x"] for i in late], dtype=float)
    y = np.log1p([jobs[i]["wait"] for i in late])
    run = np.arange(len(late)) * HINDSIGHT_RUNS // len(late)
    for name, (params, trees) in SIZES.items():
        predicted: list[float | None] = [None] * len(jobs)
        for held in range(HINDSIGHT_RUNS):
            model = _fit(x[run != held], y[run != held], params, trees)
            for i, value in zip(np.flatnonzero(run == held),
                                np.expm1(model.predict(x[run == held])), strict=True):
                predicted[late[i]] = float(value)
        found[name] = predicted
    return found


def main() -> None:
    given = json.load(sys.stdin)
    predicted, importance = fit_online(given["features"], given["jobs"], given["refit"])
    json.dump({"lightgbm_version": lightgbm.__version__, "predicted": predicted,
               "importance": importance, "hindsight": fit_hindsight(given["jobs"])},
              sys.stdout)


if __name__ == "__main__":
    main()
