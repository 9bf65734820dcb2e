"""How the steps fit together: every problem, with its kind, where it is and what to write."""

from __future__ import annotations

from typing import Any

import pytest

from tests.workflows.conftest import job, workflow
from workflows.errors import LimitExceeded, ProblemKind
from workflows.limits import Limits
from workflows.model import parse_spec
from workflows.validate import check_limits, validate_spec

K = ProblemKind
PLACES = "a placeholder may stand only in the job's name, args, environment values and outputs"
SWEEP = {"n": [1, 2]}


def problems(data: dict[str, Any]) -> list[tuple[ProblemKind, str, str]]:
    return [(p.kind, p.where, p.message) for p in validate_spec(parse_spec(data))]


CASES: list[tuple[str, dict[str, Any], list[tuple[ProblemKind, str, str]]]] = [
    ("a DAG", workflow({"a": {}, "b": {"needs": ["a"]}, "c": {"needs": ["a", "b"]}}), []),
    ("an unknown step, with a guess",
     workflow({"mesh": {}, "b": {"needs": ["msh"]}}),
     [(K.UNKNOWN_STEP, "steps.b.needs[0]", "there is no step msh: did you mean mesh?")]),
    ("an unknown step, no guess",
     workflow({"a": {}, "b": {"needs": ["zzz"]}}),
     [(K.UNKNOWN_STEP, "steps.b.needs[0]", "there is no step zzz: the steps are a, b")]),
    ("a step needing itself",
     workflow({"a": {"needs": ["a"]}}),
     [(K.CYCLE, "steps.a", "these steps wait for each other, so none can start: a needs a")]),
    ("a cycle through an input",
     workflow({"a": {"needs": ["b"]},
               "b": {"inputs": [{"from": "a:outputs/x", "dest": "x"}]}}),
     [(K.CYCLE, "steps.a", "these steps wait for each other, so none can start: a needs b, "
                           "b takes an input from a")]),
    ("two cycles",
     workflow({"a": {"needs": ["b"]}, "b": {"needs": ["a"]}, "c": {"needs": ["d"]},
               "d": {"needs": ["c"]}, "e": {"needs": ["a"]}}),
     [(K.CYCLE, "steps.a", "these steps wait for each other, so none can start: a needs b, "
                           "b needs a"),
      (K.CYCLE, "steps.c", "these steps wait for each other, so none can start: c needs d, "
                           "d needs c")]),
    ("a need listed twice",
     workflow({"a": {}, "b": {"needs": ["a", "a"]}}),
     [(K.SCHEMA, "steps.b.needs[1]", "a is listed twice")]),
    ("a matrix value twice, as text",
     workflow({"a": {"matrix": {"n": [1, "1", 2, 2.0, "2.0"]}}}),
     [(K.MATRIX, "steps.a.matrix.n", "'1', '2.0' appears more than once: each value makes one "
                                     "instance, so give each once")]),
    ("a matrix name",
     workflow({"a": {"matrix": {"1n": [1]}}}),
     [(K.MATRIX, "steps.a.matrix", "'1n' is not a valid matrix name: use 1-32 letters, digits "
                                   "or '_', not starting with a digit")]),
    ("placeholders where they may stand",
     workflow({"a": {"matrix": SWEEP, "job": job(
         "a-${{ matrix.n }}", args=["--n", "${{ matrix.n }}"],
         environment={"N": "${{ matrix.n }}"}, outputs=["r-${{ matrix.n }}.json"])}}),
     []),
    ("a placeholder in a script",
     workflow({"a": {"matrix": SWEEP, "job": {"name": "a", "script": "run ${{ matrix.n }}"}}}),
     [(K.PLACEHOLDER, "steps.a.job.script",
       f"{PLACES}; a script reads a value from an environment variable: set "
       "`environment: {N: '${{ matrix.n }}'}` and use \"$N\"")]),
    ("a placeholder in the executable, a nested field and an environment name",
     workflow({"a": {"matrix": SWEEP, "job": job(
         executable="/opt/${{ matrix.n }}/bin", resources={"nodes": "${{ matrix.n }}"},
         environment={"X_${{ matrix.n }}": "1"})}}),
     [(K.PLACEHOLDER, "steps.a.job.executable", PLACES),
      (K.PLACEHOLDER, "steps.a.job.resources.nodes", PLACES),
      (K.PLACEHOLDER, "steps.a.job.environment.X_${{ matrix.n }}", PLACES)]),
    ("a placeholder naming no matrix value",
     workflow({"a": {"matrix": SWEEP, "job": job(args=["${{ matrix.n }}", "${{ matrix.m }}"])},
               "b": {"job": job("b-${{ matrix.n }}")}}),
     [(K.PLACEHOLDER, "steps.a.job.args[1]", "uses matrix.m, but step a's matrix has n"),
      (K.PLACEHOLDER, "steps.b.job.name", "uses matrix.n, but step b has no matrix")]),
    ("job fields of the wrong shape",
     workflow({"a": {"job": {"name": 3, "args": "-v", "outputs": ["a", 1],
                             "environment": {"A": 1}}}}),
     [(K.JOB, "steps.a.job.name", "must be a string"),
      (K.JOB, "steps.a.job.args", "must be a list of strings"),
      (K.JOB, "steps.a.job.outputs", "must be a list of strings"),
      (K.JOB, "steps.a.job.environment", "must map names to string values")]),
    ("an input from an unknown step",
     workflow({"mesh": {}, "b": {"inputs": [{"from": "msh:outputs/x", "dest": "x"}]}}),
     [(K.UNKNOWN_STEP, "steps.b.inputs[0].from", "there is no step msh: did you mean mesh?")]),
    ("an input that is no reference",
     workflow({"a": {}, "b": {"inputs": [{"from": "a/x", "dest": "x"}]}}),
     [(K.DATA_EDGE, "steps.b.inputs[0].from",
       "'a/x' is not a valid step output reference: write STEP:outputs/PATH; for a step with a "
       "matrix, STEP[NAME=VALUE,...]:outputs/PATH for one instance or STEP[*]:outputs/PATH for "
       "all of them")]),
    ("a matrix producer named as if it had one instance",
     workflow({"s": {"matrix": {"n": [1], "m": ["x"]}},
               "b": {"inputs": [{"from": "s:outputs/r.json", "dest": "r"}]}}),
     [(K.DATA_EDGE, "steps.b.inputs[0].from",
       "step s has a matrix: name one instance as s[n=...,m=...]:outputs/r.json or all of them "
       "as s[*]:outputs/r.json")]),
    ("a producer without a matrix named with a selector",
     workflow({"a": {}, "b": {"inputs": [{"from": "a[*]:outputs/r", "dest": "r"}]}}),
     [(K.DATA_EDGE, "steps.b.inputs[0].from",
       "step a has no matrix, so it has one instance: write a:outputs/r")]),
    ("a selector naming some of the names",
     workflow({"s": {"matrix": {"n": [1], "m": ["x"]}},
               "b": {"inputs": [{"from": "s[n=1]:outputs/r", "dest": "r"}]}}),
     [(K.DATA_EDGE, "steps.b.inputs[0].from",
       "name every name of step s's matrix (n, m) to pick one instance, e.g. s[n=...,m=...], "
       "or take all of them with s[*]")]),
    ("a selector naming a value the producer does not have",
     workflow({"s": {"matrix": {"n": [1, 2]}},
               "b": {"inputs": [{"from": "s[n=3]:outputs/r", "dest": "r"}]}}),
     [(K.DATA_EDGE, "steps.b.inputs[0].from",
       "step s has no instance with n=3: its values of n are 1, 2")]),
    ("a placeholder in an input naming no matrix value",
     workflow({"s": {"matrix": SWEEP},
               "b": {"matrix": SWEEP, "inputs": [{"from": "s[n=${{ matrix.k }}]:outputs/r",
                                                  "dest": "r-${{ matrix.q }}"}]}}),
     [(K.PLACEHOLDER, "steps.b.inputs[0].from", "uses matrix.k, but step b's matrix has n"),
      (K.PLACEHOLDER, "steps.b.inputs[0].dest", "uses matrix.q, but step b's matrix has n")]),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_problems(data: dict[str, Any], expected: list[tuple[ProblemKind, str, str]]) -> None:
    assert problems(data) == expected


LIMITS = Limits(max_steps=3, max_matrix=4, max_instances=6, max_retries=2)


@pytest.mark.parametrize(("steps", "message"), [
    ({"a": {"matrix": {"n": [1, 2, 3], "m": [1, 2]}}},
     "the number of instances of step a's matrix is 6, above the gateway's limit of 4: sweep "
     "fewer values, or split the step"),
    ({"a": {"matrix": {"n": [1, 2, 3, 4]}}, "b": {"matrix": {"n": [1, 2, 3]}}},
     "the number of step instances of the workflow is 7, above the gateway's limit of 6: "
     "sweep fewer values, or split the workflow"),
    ({"a": {"retry": {"max": 3}}},
     "retry.max of step a is 3, above the gateway's limit of 2: retry fewer times"),
    ({"a": {}, "b": {}, "c": {}, "d": {}},
     "the number of steps is 4, above the gateway's limit of 3: split the workflow in "
     "several, or sweep with a matrix"),
])
def test_limits(steps: dict[str, dict[str, Any]], message: str) -> None:
    spec = parse_spec(workflow(steps))
    with pytest.raises(LimitExceeded) as caught:
        check_limits(spec, LIMITS)
    assert str(caught.value) == message


def test_limits_at_their_edge() -> None:
    check_limits(parse_spec(workflow({"a": {"matrix": {"n": [1, 2], "m": [1, 2]}},
                                      "b": {"retry": {"max": 2}}, "c": {}})), LIMITS)
