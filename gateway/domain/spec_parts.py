"""Pieces every section of a job spec shares: the strict base model, how a text rule shows
in the JSON Schema, and the rules for environment variables a job sets."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo

from rules.env_names import env_name_problem, runtime_name
from rules.text import TextRule

# Names the gateway or a scheduler sets itself.
ENV_RESERVED_PREFIXES = ("GRIDGATE_", "BASH_FUNC_", "SLURM_", "SGE_", "PBS_", "LSB_")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def rule_schema(rule: TextRule) -> Any:
    """A pydantic Field showing `rule`'s pattern in the JSON Schema (the check itself is
    `AfterValidator(rule.check)`: a full match)."""
    return Field(json_schema_extra={"pattern": rule.json_pattern})


def submitted(info: ValidationInfo) -> bool:
    """True when validating a spec accepted earlier and already submitted
    (`jobspec.SUBMITTED`): checks that guard submission are not applied again."""
    return isinstance(info.context, dict) and info.context.get("submitted") is True


def check_environment(value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
    """`value` when every name is one the job may set (rules.env_names, and none the
    gateway or a scheduler sets, also behind a container runtime's prefix) and no value
    holds a NUL byte; ValueError (a 422) naming the first that is not. A submitted spec's
    variables were set already: a rule tightened since does not make it unreadable."""
    if submitted(info):
        return value
    for name, val in value.items():
        if problem := env_name_problem(name):
            raise ValueError(problem)
        if runtime_name(name).startswith(ENV_RESERVED_PREFIXES):
            raise ValueError(f"environment name {name!r} uses a reserved prefix")
        if "\x00" in val:
            raise ValueError(f"environment value of {name!r} contains a NUL byte")
    return value
