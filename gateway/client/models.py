"""The JSON documents of the REST API, as TypedDicts.

They are the raw API objects (what `--json` prints), typed for callers. Timestamps
are ISO 8601 strings as the API sends them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

FINAL_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED"})


class Attempt(TypedDict):
    number: int
    site: str
    native_id: str | None
    state: str
    raw_state: str | None
    reason: str | None
    exit_code: int | None
    submitted_at: str | None
    started_at: str | None
    ended_at: str | None


class Job(TypedDict):
    id: str
    name: str
    owner: str
    project: str
    state: str
    state_reason: str | None
    raw_state: str | None
    site: str | None
    exit_code: int | None
    cancel_requested: bool
    created_at: str
    updated_at: str
    started_at: str | None
    finished_at: str | None
    labels: dict[str, str]
    spec: dict[str, Any]
    attempts: NotRequired[list[Attempt] | None]  # null in lists, filled by GET /jobs/{id}


class JobPage(TypedDict):
    items: list[Job]
    next_cursor: str | None


class Event(TypedDict):
    id: int
    at: str
    from_state: str | None
    to_state: str
    reason: str | None
    actor: str
    raw_state: str | None


class Site(TypedDict, total=False):
    name: str
    kind: str
    enabled: bool
    drained: bool
    status: str
    status_reason: str | None
    description: str | None
    max_nodes: int | None
    cores_per_node: int | None
    isolation: str | None


class Health(TypedDict, total=False):
    status: str
    database: str
    version: str


@dataclass(frozen=True)
class Output:
    """A piece of a job's stdout or stderr: `data` starts at byte `offset` of `size` so far."""

    data: bytes
    offset: int
    size: int


def is_final(job: Job) -> bool:
    """True when the job will not change state any more."""
    return job["state"] in FINAL_STATES
