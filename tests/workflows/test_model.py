"""The workflow spec as written: types and names, each problem with where it is."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from tests.workflows.conftest import job, workflow
from workflows import model
from workflows.errors import InvalidWorkflow, LimitExceeded, ProblemKind
from workflows.limits import Limits
from workflows.model import StepInput, WorkflowSpec, parse_spec
from workflows.retry import FailureCause


def test_the_documented_example_parses() -> None:
    assert model.__doc__ is not None
    spec = parse_spec(yaml.safe_load(model.__doc__.split("\n\n")[1]))
    assert list(spec.steps) == ["mesh", "solve", "report"]
    assert spec.fail_fast is False
    solve = spec.steps["solve"]
    assert solve.needs == ["mesh"]
    assert solve.matrix == {"n": [1, 2, 4], "mesh": ["coarse", "fine"]}
    assert solve.inputs == [StepInput.model_validate(
        {"from": "mesh:outputs/mesh/${{ matrix.mesh }}.msh", "dest": "input.msh"})]
    assert (solve.retry.max, solve.retry.backoff_seconds) == (3, 120)
    assert solve.retry.on == (FailureCause.NODE_FAIL, FailureCause.PREEMPTED,
                              FailureCause.BOOT_FAIL)
    assert spec.steps["report"].needs == []


def test_defaults() -> None:
    spec = parse_spec(workflow({"a": {}}))
    step = spec.steps["a"]
    assert (step.needs, step.matrix, step.inputs, step.retry.max) == ([], {}, [], 2)
    # The job is kept as written: the gateway validates it (site `auto` is its default).
    assert step.job == job("a")
    assert spec == WorkflowSpec.model_validate(spec.model_dump(by_alias=True))


EXTRA = "Extra inputs are not permitted"


@pytest.mark.parametrize(("data", "problems"), [
    ({"steps": {"a": {"job": job()}}}, [("name", "Field required")]),
    (workflow({}), [("steps", "Dictionary should have at least 1 item after validation, "
                              "not 0")]),
    (workflow({"1st": {}}), [("steps", "Value error, '1st' is not a valid step name: use 1-64 "
                                       "letters, digits, '_' or '-', starting with a letter")]),
    (workflow({"a": {"when": "always"}}), [("steps.a.when", EXTRA)]),
    (workflow({"a": {"job": "run.sh"}}), [("steps.a.job", "Input should be a valid "
                                                          "dictionary")]),
    (workflow({"a": {"matrix": {"x": [True]}}}),
     [("steps.a.matrix.x[0]", "Value error, true/false is not a matrix value: quote it "
                              "('true') for the text (YAML also reads yes, no, on and off as "
                              "true/false)")]),
    (workflow({"a": {"matrix": {"x": [{"a": 1}]}}}),
     [("steps.a.matrix.x[0]", "Value error, a matrix value is a string or a number, not "
                              "dict")]),
    (workflow({"a": {"matrix": {"x": [None]}}}),
     [("steps.a.matrix.x[0]", "Value error, a matrix value is a string or a number, not "
                              "NoneType")]),
    (workflow({"a": {"matrix": {"x": [float("nan")]}}}),
     [("steps.a.matrix.x[0]", "Value error, a matrix value must be a finite number or a "
                              "string")]),
    (workflow({"a": {"matrix": {"x": []}}}),
     [("steps.a.matrix.x", "List should have at least 1 item after validation, not 0")]),
    (workflow({"a": {"retry": {"max": -1}}}),
     [("steps.a.retry.max", "Input should be greater than or equal to 0")]),
    (workflow({"a": {"retry": {"on": ["oom"]}}}),
     [("steps.a.retry.on[0]", "Input should be 'node_fail', 'preempted', 'boot_fail', "
                              "'nonzero_exit', 'timeout' or 'out_of_memory'")]),
    (workflow({"a": {"inputs": [{"from": "b:outputs/x"}]}}),
     [("steps.a.inputs[0].dest", "Field required")]),
    (workflow({"a": {"needs": "b"}}), [("steps.a.needs", "Input should be a valid list")]),
    # Every problem at once.
    (workflow({"a": {"needs": "b", "retry": {"max": -1}}}, fail_fast="yes please"),
     [("fail_fast", "Input should be a valid boolean, unable to interpret input"),
      ("steps.a.needs", "Input should be a valid list"),
      ("steps.a.retry.max", "Input should be greater than or equal to 0")]),
])
def test_schema_problems(data: dict[str, Any], problems: list[tuple[str, str]]) -> None:
    with pytest.raises(InvalidWorkflow) as caught:
        parse_spec(data)
    assert [(p.where, p.message) for p in caught.value.problems] == problems
    assert {p.kind for p in caught.value.problems} == {ProblemKind.SCHEMA}


def test_a_document_that_is_no_mapping() -> None:
    with pytest.raises(InvalidWorkflow) as caught:
        parse_spec([1, 2])  # type: ignore[arg-type]
    assert [(p.where, p.message) for p in caught.value.problems] == [
        ("(workflow)", "Input should be a valid dictionary or instance of WorkflowSpec")]


def test_the_step_limit_is_checked_before_the_steps_are_read() -> None:
    data = {"name": "w", "steps": {f"s{i}": "not even a step" for i in range(11)}}
    with pytest.raises(LimitExceeded) as caught:
        parse_spec(data, Limits(max_steps=10))
    assert str(caught.value) == ("the number of steps is 11, above the gateway's limit of 10: "
                                 "split the workflow in several, or sweep with a matrix")
