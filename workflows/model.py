"""A workflow spec as written (YAML or JSON, already parsed): steps, each a job with
`needs`, `matrix`, `inputs` and `retry`. The job itself stays a mapping here: the gateway
validates each instance's job with its own JobSpec. This model checks types and names;
`validate` checks how the steps fit together.

    name: sweep
    fail_fast: false          # default: a failure skips only the failed step's descendants
    steps:
      mesh:
        job: {name: mesh, executable: /opt/mesh, outputs: ["mesh/*.msh"]}
      solve:
        needs: [mesh]
        matrix: {n: [1, 2, 4], mesh: [coarse, fine]}
        inputs:
          - {from: "mesh:outputs/mesh/${{ matrix.mesh }}.msh", dest: input.msh}
        job: {name: "solve-${{ matrix.n }}", executable: /opt/solve,
              args: ["--ranks", "${{ matrix.n }}"], outputs: ["result.json"]}
        retry: {max: 3, backoff_seconds: 120, on: [node_fail, preempted, boot_fail]}
      report:
        inputs: [{from: "solve[*]:outputs/result.json", dest: results}]
        job: {name: report, executable: /opt/report}
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rules.text import TextRule
from workflows.errors import InvalidWorkflow, LimitExceeded, Problem, ProblemKind
from workflows.limits import DEFAULT_LIMITS, Limits
from workflows.matrix import MATRIX_KEY, MatrixValue
from workflows.retry import RetryPolicy

STEP_NAME = TextRule(
    "step name", r"[A-Za-z][A-Za-z0-9_-]{0,63}",
    "use 1-64 letters, digits, '_' or '-', starting with a letter")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StepInput(Strict):
    """A file another step produced, placed in this step's job directory before it runs."""

    source: Annotated[str, Field(alias="from", min_length=1, max_length=8192, description=(
        "STEP:outputs/PATH (a step without a matrix), STEP[NAME=VALUE,...]:outputs/PATH (one "
        "instance of a step with a matrix: every name given) or STEP[*]:outputs/PATH (all of "
        "its instances). PATH is a file one of the step's `outputs` globs matches, or one of "
        "those globs as written (every file it matched). Placeholders allowed."))]
    dest: Annotated[str, Field(min_length=1, max_length=4096, description=(
        "Where it goes, relative to the job directory: the file itself for one file; a "
        "directory for a glob (files keep their paths below it) or for STEP[*] (instance i's "
        "files below DEST/i/). Placeholders allowed."))]


class Step(Strict):
    """One step: a job, what it waits for, its parameter sweep, inputs and retries."""

    job: Annotated[dict[str, Any], Field(description=(
        "A job spec as for POST /jobs (site `auto` unless it names one). Placeholders "
        "${{ matrix.NAME }} may stand in its name, args, environment values and outputs."))]
    needs: Annotated[list[str], Field(description=(
        "Steps that must complete first (every instance of each). A step an input comes "
        "from is needed without being listed."))] = []
    matrix: Annotated[dict[str, Annotated[list[MatrixValue], Field(min_length=1)]], Field(
        description="Named lists of values: one instance per combination (cartesian product).",
        json_schema_extra={"propertyNames": {"pattern": MATRIX_KEY.json_pattern}})] = {}
    inputs: list[StepInput] = []
    retry: RetryPolicy = RetryPolicy()


class WorkflowSpec(Strict):
    """A workflow: a DAG of steps; steps may run at different sites."""

    name: Annotated[str, Field(min_length=1, max_length=255)]
    fail_fast: Annotated[bool, Field(description=(
        "On the first failure, skip every step not started and cancel the running ones. "
        "Default: only the failed step's descendants are skipped; the rest goes on."))] = False
    steps: Annotated[dict[str, Step], Field(
        min_length=1, json_schema_extra={"propertyNames": {"pattern": STEP_NAME.json_pattern}})]

    @field_validator("name")
    @classmethod
    def _no_control(cls, value: str) -> str:
        if any(ord(c) < 32 for c in value):
            raise ValueError("the workflow's name must not hold control characters")
        return value

    @field_validator("steps")
    @classmethod
    def _step_names(cls, value: dict[str, Step]) -> dict[str, Step]:
        for name in value:
            STEP_NAME.check(name)
        return value


def parse_spec(data: Mapping[str, Any], limits: Limits = DEFAULT_LIMITS) -> WorkflowSpec:
    """The spec `data` holds, or InvalidWorkflow naming each field of the wrong form, or
    LimitExceeded when it has too many steps (counted before anything else is read)."""
    steps = data.get("steps") if isinstance(data, Mapping) else None
    if isinstance(steps, Mapping | list) and len(steps) > limits.max_steps:
        raise LimitExceeded("the number of steps", len(steps), limits.max_steps,
                            "split the workflow in several, or sweep with a matrix")
    try:
        return WorkflowSpec.model_validate(data)
    except ValidationError as exc:
        raise InvalidWorkflow([Problem(ProblemKind.SCHEMA, _where(error["loc"]), error["msg"])
                               for error in exc.errors()]) from None


def _where(loc: tuple[int | str, ...]) -> str:
    where = ""
    for part in loc:
        if isinstance(part, int):
            where += f"[{part}]"
        else:
            where += f".{part}" if where else str(part)
    return where or "(workflow)"
