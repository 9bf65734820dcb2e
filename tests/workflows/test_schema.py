"""The JSON Schema of a workflow spec: a valid 2020-12 schema that takes what the model takes,
refuses what it refuses (for what a schema can say), and checks jobs with the gateway's."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from gateway.domain.jobspec import JobSpec
from tests.workflows.conftest import job, workflow
from workflows import model
from workflows.errors import InvalidWorkflow
from workflows.model import parse_spec
from workflows.schema import DIALECT, workflow_schema

EXAMPLE: dict[str, Any] = yaml.safe_load((model.__doc__ or "").split("\n\n")[1])
# PyYAML reads the key `on` as true: in JSON it is "on".
for _step in EXAMPLE["steps"].values():
    if True in _step.get("retry", {}):
        _step["retry"]["on"] = _step["retry"].pop(True)

GOOD = [
    EXAMPLE,
    workflow({"a": {}}),
    workflow({"a": {"matrix": {"x": ["s", 1, 0.5]}}}, fail_fast=True),
]
BAD = [
    workflow({}),
    {"steps": {"a": {"job": job()}}},
    workflow({"1a": {}}),
    workflow({"a": {"when": "always"}}),
    workflow({"a": {"matrix": {"x": [True]}}}),
    workflow({"a": {"matrix": {"1x": [1]}}}),
    workflow({"a": {"matrix": {"x": []}}}),
    workflow({"a": {"retry": {"on": ["oom"]}}}),
    workflow({"a": {"retry": {"backoff_seconds": 4000}}}),
    workflow({"a": {"inputs": [{"from": "b:outputs/x"}]}}),
]


def test_the_schema_is_a_2020_12_schema() -> None:
    schema = workflow_schema()
    assert schema["$schema"] == DIALECT
    Draft202012Validator.check_schema(schema)
    assert schema["properties"]["steps"]["propertyNames"]["pattern"] == (
        "^(?:[A-Za-z][A-Za-z0-9_-]{0,63})$")
    assert set(schema["$defs"]) == {"Step", "StepInput", "RetryPolicy", "FailureCause"}


@pytest.mark.parametrize("data", GOOD)
def test_schema_and_model_take_the_same_specs(data: dict[str, Any]) -> None:
    assert list(Draft202012Validator(workflow_schema()).iter_errors(data)) == []
    parse_spec(data)


@pytest.mark.parametrize("data", BAD)
def test_schema_and_model_refuse_the_same_specs(data: dict[str, Any]) -> None:
    assert list(Draft202012Validator(workflow_schema()).iter_errors(data)) != []
    # The matrix name is checked with the other matrix problems, after parsing.
    if "1x" not in str(data):
        with pytest.raises(InvalidWorkflow):
            parse_spec(data)


def test_jobs_checked_with_the_gateways_job_schema() -> None:
    schema = workflow_schema(JobSpec.model_json_schema())
    Draft202012Validator.check_schema(schema)
    validator = Draft202012Validator(schema)
    assert schema["$defs"]["Step"]["properties"]["job"]["$ref"] == "#/$defs/JobSpec"
    assert "Resources" in schema["$defs"]
    assert list(validator.iter_errors(EXAMPLE)) == []
    bad = workflow({"a": {"job": job(resources={"nodes": 0})}})
    assert [e.message for e in validator.iter_errors(bad)] == ["0 is less than the minimum of 1"]
    assert list(Draft202012Validator(workflow_schema()).iter_errors(bad)) == []


def test_a_job_schema_with_the_workflows_names_is_refused() -> None:
    with pytest.raises(ValueError, match=r"definitions \['Step'\]"):
        workflow_schema({"type": "object", "$defs": {"Step": {}}})
