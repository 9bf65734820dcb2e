"""Workflows, their step instances and events, as the API sends them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

# pydantic reads TypedDicts from typing_extensions on Python < 3.12.
from typing_extensions import TypedDict


class WorkflowStepOut(TypedDict):
    """One step instance: a step, or one combination of its matrix, and the job that
    runs it (null only if it has none yet)."""

    instance: str  # `solve[2]`: the step's name, with the index of its combination
    step: str
    matrix: str  # `n=4, mesh=fine`; "" for a step without a matrix
    # pending, running, completed, failed, cancelled or skipped
    state: str
    reason: str | None
    needs: list[str]  # the instances it waits for
    job_id: str | None
    job_state: str | None
    site: str | None
    retries: int  # failed attempts retried so far
    retry_at: datetime | None


class WorkflowOut(TypedDict):
    """A workflow: its state (running, completed, failed or cancelled), how many of its
    instances are in each state, and (from GET of one) each instance."""

    id: str
    name: str
    owner: str
    state: str
    fail_fast: bool
    cancel_requested: bool
    created_at: datetime
    updated_at: datetime
    ended_at: datetime | None
    step_states: dict[str, int]
    steps: list[WorkflowStepOut] | None  # null in lists
    spec: dict[str, Any] | None  # null in lists


class WorkflowList(TypedDict):
    """A page of workflows, newest first; `next_cursor` asks for the next one."""

    items: list[WorkflowOut]
    next_cursor: str | None


class WorkflowEventOut(TypedDict):
    """Something that happened to a workflow or (with `instance`) one of its steps."""

    at: datetime
    instance: str | None
    state: str
    message: str
    actor: str


class WorkflowEventList(TypedDict):
    """A page of a workflow's events, oldest first."""

    items: list[WorkflowEventOut]
    next_cursor: str | None
