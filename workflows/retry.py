"""When a failed step instance is tried again, and after how long.

By default a step is retried for failures the site caused (a node failed, the job was
preempted, its nodes did not boot): twice, 60 s then 120 s later. A job's own failure (a
non-zero exit, its walltime, its memory) is the same on a second try, so it is retried only
when `retry.on` names it. A retry is another attempt of the same job: the instance keeps
its place in the workflow, and readiness sees it running until the last attempt ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# Doubling stops here: a retry a day later is already a different experiment.
MAX_DELAY_SECONDS = 6 * 3600


class FailureCause(StrEnum):
    """Why an attempt failed, as far as a retry cares (the gateway maps reasons to these)."""

    NODE_FAIL = "node_fail"  # a node of the job failed (Slurm NODE_FAIL)
    PREEMPTED = "preempted"  # the site stopped it for another job
    BOOT_FAIL = "boot_fail"  # the site could not start its nodes (BOOT_FAIL, PBS exec fail)
    NONZERO_EXIT = "nonzero_exit"  # the job's program exited non-zero or was killed
    TIMEOUT = "timeout"  # it reached its walltime
    OUT_OF_MEMORY = "out_of_memory"  # it used more memory than it asked for


SITE_CAUSED = (FailureCause.NODE_FAIL, FailureCause.PREEMPTED, FailureCause.BOOT_FAIL)


class RetryPolicy(BaseModel):
    """`retry:` of a step: how many more attempts, the first delay, and for which causes."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max: Annotated[int, Field(ge=0, description=(
        "Attempts after the first (0: never retried)."))] = 2
    backoff_seconds: Annotated[int, Field(ge=0, le=3600, description=(
        "Delay before the first retry; it doubles for each further one "
        f"(at most {MAX_DELAY_SECONDS} s)."))] = 60
    on: Annotated[tuple[FailureCause, ...], Field(description=(
        "Causes retried. Default: the site's (node_fail, preempted, boot_fail); add "
        "nonzero_exit, timeout or out_of_memory to retry the job's own failures."))] = (
        SITE_CAUSED)

    @model_validator(mode="before")
    @classmethod
    def _yaml_on(cls, data: Any) -> Any:
        # YAML 1.1 (PyYAML's safe_load) reads the key `on` as the boolean true.
        if isinstance(data, dict) and True in data and "on" not in data:
            data = {("on" if key is True else key): value for key, value in data.items()}
        return data

    @field_validator("on")
    @classmethod
    def _each_cause_once(cls, value: tuple[FailureCause, ...]) -> tuple[FailureCause, ...]:
        return tuple(dict.fromkeys(value))


@dataclass(frozen=True)
class RetryDecision:
    """Whether to submit another attempt, after how many seconds, and why (for the event)."""

    retry: bool
    delay_seconds: int
    reason: str


def decide_retry(policy: RetryPolicy, failures: int, cause: FailureCause | None) -> RetryDecision:
    """What to do after the `failures`-th failed attempt of an instance (1 after the first),
    whose cause was `cause` (None: the gateway could not tell)."""
    if failures < 1:
        raise ValueError("decide_retry is asked after a failed attempt: failures >= 1")
    if cause is None:
        return RetryDecision(False, 0, "the cause of the failure is not known: not retried")
    if cause not in policy.on:
        causes = ", ".join(policy.on) or "none"
        return RetryDecision(False, 0, f"{cause} is not retried (retry.on: {causes})")
    if failures > policy.max:
        return RetryDecision(False, 0, f"{cause}: the {policy.max} retries of retry.max are "
                                       "used up")
    delay = min(policy.backoff_seconds * 2 ** (failures - 1), MAX_DELAY_SECONDS)
    return RetryDecision(True, delay, f"{cause}: retry {failures} of {policy.max} in {delay} s")
