"""Pieces every section of a job spec shares: the strict base model, how a text rule shows
in the JSON Schema, and the rules for environment variables a job sets."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from adapters.text_rules import ENV_NAME, TextRule

# Variables that change how a loader or shell behaves before the user's program runs.
ENV_DENYLIST = frozenset(
    {
        "LD_PRELOAD",
        "LD_AUDIT",
        "LD_DEBUG_OUTPUT",
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PROMPT_COMMAND",
        "PS4",
        "IFS",
        "PYTHONSTARTUP",
        "PERL5OPT",
        "NODE_OPTIONS",
    }
)
ENV_RESERVED_PREFIXES = ("GRIDGATE_", "BASH_FUNC_", "SLURM_", "SGE_", "PBS_", "LSB_")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def rule_schema(rule: TextRule) -> Any:
    """A pydantic Field showing `rule`'s pattern in the JSON Schema (the check itself is
    `AfterValidator(rule.check)`: a full match)."""
    return Field(json_schema_extra={"pattern": rule.json_pattern})


def check_environment(value: dict[str, str]) -> dict[str, str]:
    """`value` when every name is a plain variable name the job may set and no value holds
    a NUL byte; ValueError (a 422) naming the first that is not."""
    for name, val in value.items():
        ENV_NAME.check(name)
        if name in ENV_DENYLIST:
            raise ValueError(f"environment name {name!r} is not allowed")
        if name.startswith(ENV_RESERVED_PREFIXES):
            raise ValueError(f"environment name {name!r} uses a reserved prefix")
        if "\x00" in val:
            raise ValueError(f"environment value of {name!r} contains a NUL byte")
    return value
