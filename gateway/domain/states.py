"""Job states: an ordered lifecycle whose final states are final."""

from __future__ import annotations

from enum import StrEnum

# The reason vocabulary lives in adapters (which may not import gateway); one set for both.
from adapters.reasons import Reason

__all__ = ["ACTIVE_STATES", "FINAL_STATES", "JobState", "Reason", "can_transition"]


class JobState(StrEnum):
    """Where a job is in its life. Order matters: a job never moves backwards."""

    ACCEPTED = "ACCEPTED"
    STAGING_IN = "STAGING_IN"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    STAGING_OUT = "STAGING_OUT"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def is_final(self) -> bool:
        return self in FINAL_STATES

    @property
    def rank(self) -> int:
        return _RANK[self]


FINAL_STATES = frozenset({JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED})
ACTIVE_STATES = frozenset(set(JobState) - FINAL_STATES)
_RANK = {state: i for i, state in enumerate(JobState)}
# All finals share one rank: any of them may follow any non-final state.
for _final in FINAL_STATES:
    _RANK[_final] = len(JobState)


class AttemptState(StrEnum):
    """Where one submission of a job to one site stands: SUBMITTING (claimed, staging in,
    submitting) until the site's job id is committed, then the job state it reached there.
    Stored as these strings, the same values the column held before it was typed."""

    SUBMITTING = "SUBMITTING"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    # Lost a hedge: another attempt of the job started first, this one was cancelled
    # (or, had it run anyway, disowned): never the job's result, never charged.
    REVOKED = "REVOKED"

    @property
    def is_final(self) -> bool:
        return self in FINAL_ATTEMPT_STATES

    @classmethod
    def of(cls, state: JobState) -> AttemptState:
        """The attempt state a job state reached at the site stands for."""
        return cls(state.value)


FINAL_ATTEMPT_STATES = frozenset(
    {AttemptState.COMPLETED, AttemptState.FAILED, AttemptState.CANCELLED,
     AttemptState.REVOKED})
# Attempts that hold one of the site's job slots (max_jobs).
LIVE_ATTEMPT_STATES = frozenset(
    {AttemptState.SUBMITTING, AttemptState.QUEUED, AttemptState.RUNNING})


def can_transition(current: JobState, target: JobState) -> bool:
    """True when `target` lies strictly ahead of `current` (finals are terminal)."""
    if current.is_final:
        return False
    return target.rank > current.rank

