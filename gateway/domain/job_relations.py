"""Slurm-style relations of plain jobs (issue 16): a job spec's `depends_on` and `array`,
checked by the pure workflows package, and the gates that keep an ACCEPTED job from being
routed or claimed until its dependencies are met or its array's throttle has room.

A gate is a column of the job row (`jobs.gate`), so the worker decides from the database
alone, every cycle (gateway.services.jobs.gates): nothing is kept in memory.
"""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache
from typing import Annotated

from pydantic import AfterValidator, Field

from workflows.arrays import ARRAY_SPEC, ArraySpec, parse_array
from workflows.dependencies import JobDependency, check_dependencies
from workflows.limits import DEFAULT_LIMITS

__all__ = ["WAITS_FOR", "ArrayText", "DependsOn", "Gate", "JobDependency", "array_of",
           "task_environment"]


class Gate(StrEnum):
    """What keeps an ACCEPTED job from being routed or claimed (a hold aside)."""

    DEPENDENCY = "dependency"  # the jobs it depends on have not ended as it needs yet
    NEVER = "never"  # a dependency can never be satisfied: it waits until cancelled
    THROTTLE = "throttle"  # its array already runs as many tasks as its throttle allows
    # A workflow step whose producers have not all completed (or whose inputs are not yet
    # resolved): the worker's workflow step opens it (gateway.services.workflows.advance).
    WORKFLOW = "workflow"


# What a gated job still waits for, in a sentence ("... it still waits for <this>").
WAITS_FOR = {
    Gate.DEPENDENCY: "its dependencies",
    Gate.NEVER: "dependencies that can never be satisfied (cancel it)",
    Gate.THROTTLE: "its array's throttle",
    Gate.WORKFLOW: "the steps of its workflow it needs",
}


def _dependencies(value: list[JobDependency]) -> list[JobDependency]:
    # Repeats dropped; afterok and afternotok on one job refused (they cannot both hold).
    return list(check_dependencies(value))


def _array(value: str) -> str:
    array_of(value)  # the syntax and the hard limits; the configured one: at submit
    return value


DependsOn = Annotated[list[JobDependency], Field(
    max_length=DEFAULT_LIMITS.max_dependencies, description=(
        "Jobs (or job arrays: all their tasks) this job waits for, as Slurm's --dependency: "
        "afterok (completed), afterany (ended), afternotok (failed or cancelled). A "
        "dependency that can never be satisfied leaves the job ACCEPTED with the reason "
        "DependencyNeverSatisfied until it is cancelled.")),
    AfterValidator(_dependencies)]

ArrayText = Annotated[str, Field(
    min_length=1, max_length=DEFAULT_LIMITS.max_text,
    json_schema_extra={"pattern": ARRAY_SPEC.json_pattern}, description=(
        "Run the job as an array of tasks, in Slurm's --array syntax: 0-99, 0-99:2, "
        "1,3,5-9; '%N' lets at most N tasks run at once (0-99%10). Each task sees its "
        "index in GRIDGATE_ARRAY_TASK_ID.")),
    AfterValidator(_array)]


@lru_cache(maxsize=64)
def array_of(text: str) -> ArraySpec:
    """The parsed array spec (cached: every task of an array asks for the same one)."""
    return parse_array(text)


def task_environment(array: str, index: int) -> dict[str, str]:
    """The variables task `index` of the array `array` runs with."""
    return array_of(array).environment(index)
