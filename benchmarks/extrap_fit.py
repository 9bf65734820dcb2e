"""Fit Extra-P's single-parameter models to runtime series (JSON on stdin, JSON on stdout).

Run by benchmarks/runtime_model_vs_extrap.py under an interpreter that has `extrap`
(the `evaluation` extra, or a venv of its own: Extra-P brings PySide6, matplotlib and
scikit-learn, which the gateway does not need). It imports no gridgate code.

Input: {"fits": [{"procs": [...], "times": [...], "predict": [...]}, ...]}, one run time
per count. Each fit builds an Extra-P `Experiment` with one parameter p (one callpath,
one metric: the run time) and models it with `ModelGenerator` and the default
single-parameter modeler (`SingleParameterModeler`: PMNF hypothesis search with Extra-P's
own leave-one-out cross-validation), in two configurations: as shipped (`default`), and
with the modeler's "Negative exponents" option (`negative_exponents`), which Extra-P
documents as the one for strong scaling: the default exponents only grow with p, and a
run time at a fixed problem size falls with p.

Output: {"extrap_version": ..., "modelers": {name: [{"function": ..., "predicted": [...]}]}},
one entry per input fit, in order.
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

import extrap
from extrap.entities.callpath import Callpath
from extrap.entities.coordinate import Coordinate
from extrap.entities.experiment import Experiment
from extrap.entities.measurement import Measurement
from extrap.entities.metric import Metric
from extrap.entities.parameter import Parameter
from extrap.modelers.model_generator import ModelGenerator
from extrap.modelers.single_parameter.basic import SingleParameterModeler

CONFIGURATIONS = {"default": False, "negative_exponents": True}


def fit_one(procs: list[float], times: list[float], predict: list[float],
            negative_exponents: bool) -> dict[str, Any]:
    """Model one training series with Extra-P and evaluate the model at `predict`."""
    experiment = Experiment()
    experiment.add_parameter(Parameter("p"))
    callpath, metric = Callpath("run"), Metric("time")
    experiment.add_callpath(callpath)
    experiment.add_metric(metric)
    for p, t in zip(procs, times, strict=True):
        coordinate = Coordinate(float(p))
        experiment.add_coordinate(coordinate)
        experiment.add_measurement(Measurement(coordinate, callpath, metric, [t]))
    modeler = SingleParameterModeler()
    modeler.allow_negative_exponents = negative_exponents
    generator = ModelGenerator(experiment, modeler)
    # Extra-P warns when it has fewer than five points (extrapolation trains on three) and
    # when it drops log terms; it models all the same, and stdout must stay JSON.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        generator.model_all()
    function = generator.models[(callpath, metric)].hypothesis.function
    return {
        "function": function.to_string("p"),
        "predicted": [float(function.evaluate(float(p))) for p in predict],
    }


def main() -> None:
    """Read the fits from stdin and print Extra-P's predictions for each configuration."""
    fits = json.load(sys.stdin)["fits"]
    modelers = {
        name: [fit_one(f["procs"], f["times"], f["predict"], negative) for f in fits]
        for name, negative in CONFIGURATIONS.items()
    }
    json.dump({"extrap_version": extrap.__version__, "modelers": modelers}, sys.stdout)


if __name__ == "__main__":
    main()
