"""Jobs, their attempts, events and collected output files, as the API sends them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

# pydantic reads TypedDicts from typing_extensions on Python < 3.12.
from typing_extensions import TypedDict


class AttemptOut(TypedDict):
    """One submission of a job to one site."""

    number: int
    site: str
    native_id: str | None
    state: str
    raw_state: str | None
    reason: str | None
    exit_code: int | None
    # A job of several steps (container `then`): each step's exit code, in order, as far
    # as they ran; null for one program.
    step_exit_codes: list[int] | None
    submitted_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None


class JobOut(TypedDict):
    """A job, the same in lists and alone: `attempts` lists its submissions, oldest
    first (empty before the first)."""

    id: str
    name: str
    owner: str
    project: str
    state: str
    reason: str | None
    raw_state: str | None
    site: str | None
    exit_code: int | None
    cancel_requested: bool
    # Held by its owner: not routed or submitted until released (only while ACCEPTED).
    held: bool
    # A task of a job array: the array's id and the task's index (else both null).
    array_job_id: str | None
    array_index: int | None
    # The door it came in by: "api" (the gateway's own API, CLI and workflows) or "tes".
    origin: str
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    labels: dict[str, str]
    spec: dict[str, Any]
    attempts: list[AttemptOut]


class JobArrayOut(TypedDict):
    """A job array: what was asked (`array`, e.g. `0-9%2`), and how many of its tasks are
    in each state (its tasks are jobs: `GET /jobs?array_job_id=...`)."""

    id: str
    name: str
    owner: str
    array: str
    task_count: int
    # Tasks past ACCEPTED at once at most (null: no limit).
    throttle: int | None
    created_at: datetime
    task_states: dict[str, int]


class JobArrayList(TypedDict):
    """A page of job arrays, newest first; `next_cursor` asks for the next one."""

    items: list[JobArrayOut]
    next_cursor: str | None


class JobList(TypedDict):
    """A page of jobs, newest first; `next_cursor` asks for the next one."""

    items: list[JobOut]
    next_cursor: str | None


class EventOut(TypedDict):
    """One state change of a job, with who made it and why."""

    id: int
    at: datetime
    from_state: str | None
    to_state: str
    reason: str | None
    actor: str
    raw_state: str | None


class EventList(TypedDict):
    """A page of a job's events, oldest first; `next_cursor` asks for the next one."""

    items: list[EventOut]
    next_cursor: str | None


class JobOutputOut(TypedDict):
    """One collected output of a job (GET /jobs/{id}/outputs)."""

    path: str
    size: int
    sha256: str
    # "gateway": fetched into the gateway store; "site": kept in the job directory.
    location: str
    site: str


class JobOutputList(TypedDict):
    """A page of a job's outputs, by path; `next_cursor` asks for the next one."""

    items: list[JobOutputOut]
    next_cursor: str | None
