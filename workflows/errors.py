"""Every error the workflow core raises, in one tree. No HTTP here: the gateway maps them.

    WorkflowError             anything the workflow core refuses; `str()` says what to write
    ├── InvalidArraySpec      an `array:` spec that is not Slurm's form (0-99, 1,3,5-9, 0-99:2%10)
    ├── InvalidDependency     a `depends_on` entry or `--dependency` text the gateway cannot follow
    ├── InvalidWorkflow       a workflow spec with problems; `problems` names each one and where
    ├── LimitExceeded         more steps, matrix instances, array tasks... than the gateway allows
    └── UnknownInstance       a state given for a step instance the plan does not have

A `ValueError` on purpose: pydantic turns one raised by a validator into a 422 with the
message, so the gateway's schemas can call these checks as they are. A dependency that can
never be satisfied is not an error: `dependencies.dependency_status` says so, with a reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum


class WorkflowError(ValueError):
    """Base of every refusal of the workflow core; the message is for a person."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidArraySpec(WorkflowError):
    """A job array spec that is not one of Slurm's forms."""


class InvalidDependency(WorkflowError):
    """A job dependency (entry or `--dependency` text) the gateway cannot follow."""


class ProblemKind(StrEnum):
    """What is wrong with a workflow, for clients that sort problems by kind."""

    SCHEMA = "schema"  # a field of the wrong type or form (from the pydantic model)
    UNKNOWN_STEP = "unknown_step"  # `needs` or `from` names no step of the workflow
    CYCLE = "cycle"  # steps that wait for each other
    MATRIX = "matrix"  # a matrix key or value the gateway cannot expand
    PLACEHOLDER = "placeholder"  # a `${{ ... }}` it cannot substitute, or in a place it may not
    DATA_EDGE = "data_edge"  # a `from:` that names no output of its producer
    JOB = "job"  # a job field the workflow reads (name, args, environment, outputs) is malformed


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a workflow: `where` is a path into the spec (steps.sim.needs[0])."""

    kind: ProblemKind
    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


class InvalidWorkflow(WorkflowError):
    """A workflow spec with one or more problems, each named with where it is."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        count = len(self.problems)
        lines = "\n".join(f"- {p}" for p in self.problems)
        super().__init__(f"The workflow has {count} problem{'s' if count != 1 else ''}:\n"
                         f"{lines}")


class LimitExceeded(WorkflowError):
    """More of something than the gateway's limits allow; the message says what to do."""

    def __init__(self, what: str, value: int, limit: int, hint: str) -> None:
        super().__init__(f"{what} is {value}, above the gateway's limit of {limit}: {hint}")
        self.what = what
        self.value = value
        self.limit = limit


class UnknownInstance(WorkflowError):
    """A state was given for an instance id the workflow's plan does not have."""
