"""The spec expanded into step instances: values filled in, needs and inputs resolved to
(producer instance, path), problems that depend on the values found per instance."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from tests.workflows.conftest import job, workflow
from workflows import model
from workflows.errors import InvalidWorkflow, LimitExceeded, ProblemKind, UnknownInstance
from workflows.limits import Limits
from workflows.plan import ResolvedInput, plan_workflow, workflow_problems

EXAMPLE: dict[str, Any] = yaml.safe_load((model.__doc__ or "").split("\n\n")[1])


def test_the_documented_example() -> None:
    plan = plan_workflow(EXAMPLE)
    assert plan.name == "sweep" and plan.fail_fast is False
    assert [(i.id, i.label, i.index) for i in plan.instances] == [
        ("mesh", "mesh", None),
        ("solve[0]", "solve[n=1, mesh=coarse]", 0),
        ("solve[1]", "solve[n=1, mesh=fine]", 1),
        ("solve[2]", "solve[n=2, mesh=coarse]", 2),
        ("solve[3]", "solve[n=2, mesh=fine]", 3),
        ("solve[4]", "solve[n=4, mesh=coarse]", 4),
        ("solve[5]", "solve[n=4, mesh=fine]", 5),
        ("report", "report", None),
    ]
    solve = plan["solve[3]"]
    assert solve.values == (("n", "2"), ("mesh", "fine"))
    assert solve.needs == ("mesh",)
    assert solve.inputs == (ResolvedInput("mesh", "mesh/fine.msh", "input.msh", False),)
    assert solve.job == {"name": "solve-2", "executable": "/opt/solve",
                         "args": ["--ranks", "2"], "outputs": ["result.json"]}
    assert solve.retry.max == 3
    report = plan["report"]
    # A gather: each instance's files below DEST/<instance index>/; it waits for them all.
    assert report.needs == tuple(f"solve[{i}]" for i in range(6))
    assert report.inputs == tuple(ResolvedInput(f"solve[{i}]", "result.json", f"results/{i}",
                                                True) for i in range(6))
    assert plan.ids == tuple(i.id for i in plan.instances)


def test_one_instance_per_consumer_instance() -> None:
    # Each analyse[n] takes solve[n]'s result, and waits for that one only.
    data = workflow({
        "analyse": {"matrix": {"n": [4, 1]},
                    "inputs": [{"from": "solve[n=${{ matrix.n }}]:outputs/r-${{ matrix.n }}.json",
                                "dest": "in/r.json"}]},
        "solve": {"matrix": {"n": [1, 2, 4]},
                  "job": job("solve", outputs=["r-${{ matrix.n }}.json", "log/*"])},
        "summary": {"needs": ["analyse"],
                    "inputs": [{"from": "solve[n=2]:outputs/log/*", "dest": "logs"}]},
    })
    plan = plan_workflow(data)
    # Producers first, whatever order the steps are written in.
    assert plan.ids == ("solve[0]", "solve[1]", "solve[2]", "analyse[0]", "analyse[1]",
                        "summary")
    assert plan["analyse[0]"].needs == ("solve[2]",)
    assert plan["analyse[0]"].inputs == (
        ResolvedInput("solve[2]", "r-4.json", "in/r.json", False),)
    assert plan["analyse[1]"].needs == ("solve[0]",)
    assert plan["solve[2]"].job["outputs"] == ["r-4.json", "log/*"]
    # A glob as the producer wrote it: a directory of every file it matched.
    assert plan["summary"].inputs == (ResolvedInput("solve[1]", "log/*", "logs", True),)
    assert plan["summary"].needs == ("solve[1]", "analyse[0]", "analyse[1]")


def test_values_are_substituted_as_data_and_the_spec_is_left_alone() -> None:
    data = workflow({"a": {"matrix": {"x": ["$(id)", "a b;c"]}, "job": job(
        "a ${{ matrix.x }}", args=["--x=${{ matrix.x }}"], environment={"X": "${{ matrix.x }}"},
        resources={"nodes": 2})}})
    before = copy.deepcopy(data)
    plan = plan_workflow(data)
    assert [i.job for i in plan.instances] == [
        {"name": "a $(id)", "executable": "/bin/true", "args": ["--x=$(id)"],
         "environment": {"X": "$(id)"}, "resources": {"nodes": 2}},
        {"name": "a a b;c", "executable": "/bin/true", "args": ["--x=a b;c"],
         "environment": {"X": "a b;c"}, "resources": {"nodes": 2}},
    ]
    assert data == before
    plan.instances[0].job["resources"]["nodes"] = 9
    assert plan.instances[1].job["resources"]["nodes"] == 2


PER_INSTANCE = [
    ("no outputs declared",
     workflow({"a": {}, "b": {"inputs": [{"from": "a:outputs/r.json", "dest": "r.json"}]}}),
     [("steps.b.inputs[0].from", "a declares no outputs: add 'r.json' (or a glob matching it) "
                                 "to its job's outputs")]),
    ("no output matches",
     workflow({"a": {"job": job(outputs=["out/*.json", "log.txt"])},
               "b": {"inputs": [{"from": "a:outputs/out/x/r.json", "dest": "r.json"}]}}),
     [("steps.b.inputs[0].from", "no output of a matches 'out/x/r.json': its outputs are "
                                 "'out/*.json', 'log.txt'")]),
    ("a glob not written as the producer wrote it",
     workflow({"a": {"job": job(outputs=["out/*.json"])},
               "b": {"inputs": [{"from": "a:outputs/out/r*.json", "dest": "rs"}]}}),
     [("steps.b.inputs[0].from", "'out/r*.json' is a glob: write it exactly as one of a's "
                                 "outputs ('out/*.json'), or name one file")]),
    ("a value that names no producer instance, once with a count",
     workflow({"s": {"matrix": {"n": [1, 2]}, "job": job(outputs=["r"])},
               "b": {"matrix": {"n": [1, 7, 8, 9]},
                     "inputs": [{"from": "s[n=${{ matrix.n }}]:outputs/r", "dest": "r"}]}}),
     [("steps.b.inputs[0].from", "b[n=7]: step s has no instance with n=7 (and 2 more "
                                 "instances)")]),
    ("a path that leaves the job directory once filled in",
     workflow({"s": {"job": job(outputs=["**"])},
               "b": {"matrix": {"d": ["ok", ".."]},
                     "inputs": [{"from": "s:outputs/${{ matrix.d }}/x",
                                 "dest": "/in/${{ matrix.d }}"}]}}),
     [("steps.b.inputs[0].dest", "b[d=ok]: '/in/ok' is absolute: give a path relative to the "
                                 "job directory (and 1 more instance)"),
      ("steps.b.inputs[0].from", "b[d=..]: '../x' has a '..' name: it would leave the job "
                                 "directory")]),
    ("two inputs to one place",
     workflow({"s": {"job": job(outputs=["a", "b"])},
               "t": {"inputs": [{"from": "s:outputs/a", "dest": "x"},
                                {"from": "s:outputs/b", "dest": "x"}]}}),
     [("steps.t.inputs[1].dest", "another input already goes to 'x': give each input its own "
                                 "dest")]),
    ("a gather where one producer instance lacks the output",
     workflow({"s": {"matrix": {"n": [1, 2]}, "job": job(outputs=["r-${{ matrix.n }}"])},
               "t": {"inputs": [{"from": "s[*]:outputs/r-1", "dest": "rs"}]}}),
     [("steps.t.inputs[0].from", "no output of s[n=2] matches 'r-1': its outputs are 'r-2'")]),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in PER_INSTANCE],
                         ids=[c[0] for c in PER_INSTANCE])
def test_per_instance_problems(data: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    found = workflow_problems(data)
    assert [(p.where, p.message) for p in found] == expected
    assert {p.kind for p in found} == {ProblemKind.DATA_EDGE}


def test_static_problems_stop_before_expansion() -> None:
    with pytest.raises(InvalidWorkflow) as caught:
        plan_workflow(workflow({"a": {"needs": ["b"]}}))
    assert str(caught.value) == ("The workflow has 1 problem:\n- steps.a.needs[0]: there is no "
                                 "step b: the steps are a")
    assert workflow_problems(EXAMPLE) == []


def test_limits_are_refused_before_expansion() -> None:
    data = workflow({"a": {"matrix": {"x": list(range(100)), "y": list(range(100))}}})
    with pytest.raises(LimitExceeded, match="is 10000, above the gateway's limit of 256"):
        plan_workflow(data)
    with pytest.raises(LimitExceeded, match="is 10000, above the gateway's limit of 256"):
        workflow_problems(data)
    assert len(plan_workflow(data, Limits(max_matrix=10_000, max_instances=10_000)).ids) == (
        10_000)


def test_an_unknown_instance_id() -> None:
    with pytest.raises(UnknownInstance, match="the workflow 'sweep' has no step instance "
                                              "'solve'"):
        plan_workflow(EXAMPLE)["solve"]
