"""A gridgate job's state as a TES 1.1 task state (pure).

TES has eleven states; a job has eight, plus what its row says beside the state (a
cancel asked for, a hold, the reason and exit code of a failure). The mapping:

| job | beside | TES |
| --- | --- | --- |
| any state not final | cancel requested | CANCELING |
| ACCEPTED | held by its owner | PAUSED |
| ACCEPTED (routing, a dependency, a throttle), QUEUED | | QUEUED |
| STAGING_IN | | INITIALIZING ("downloading input files") |
| RUNNING, STAGING_OUT | | RUNNING (COMPLETE needs the outputs uploaded) |
| COMPLETED | | COMPLETE |
| CANCELLED | | CANCELED |
| FAILED | preempted by the site | PREEMPTED |
| FAILED | the program: a non-zero exit, a signal, its time or memory limit | EXECUTOR_ERROR |
| FAILED | anything else: a node or boot failure, staging, a refused submission | SYSTEM_ERROR |

A time limit or memory limit reached is the executor's: the task asked for those limits
and its program went past them, as Slurm's TIMEOUT and OUT_OF_MEMORY say of the job.
"""

from __future__ import annotations

from enum import StrEnum

from gateway.domain.failure_cause import FailureCause, failure_cause
from gateway.domain.states import JobState


class TesState(StrEnum):
    """TES 1.1 `tesState`, in the specification's order."""

    UNKNOWN = "UNKNOWN"
    QUEUED = "QUEUED"
    INITIALIZING = "INITIALIZING"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    COMPLETE = "COMPLETE"
    EXECUTOR_ERROR = "EXECUTOR_ERROR"
    SYSTEM_ERROR = "SYSTEM_ERROR"
    CANCELED = "CANCELED"
    PREEMPTED = "PREEMPTED"
    CANCELING = "CANCELING"

_RUNNING = {
    JobState.QUEUED: TesState.QUEUED,
    JobState.STAGING_IN: TesState.INITIALIZING,
    JobState.RUNNING: TesState.RUNNING,
    JobState.STAGING_OUT: TesState.RUNNING,
}
_EXECUTOR = frozenset({FailureCause.NONZERO_EXIT, FailureCause.TIMEOUT,
                       FailureCause.OUT_OF_MEMORY})


def tes_state(state: str, *, cancel_requested: bool = False, held: bool = False,
              reason: str | None = None, exit_code: int | None = None) -> TesState:
    """The TES state of a job in `state` (a `JobState` value) with these columns."""
    try:
        job = JobState(state)
    except ValueError:
        return TesState.UNKNOWN  # a row newer than this code: never imply it is queued
    if job is JobState.COMPLETED:
        return TesState.COMPLETE
    if job is JobState.CANCELLED:
        return TesState.CANCELED
    if job is JobState.FAILED:
        cause = failure_cause(reason, exit_code)
        if cause is FailureCause.PREEMPTED:
            return TesState.PREEMPTED
        return TesState.EXECUTOR_ERROR if cause in _EXECUTOR else TesState.SYSTEM_ERROR
    if cancel_requested:
        return TesState.CANCELING
    if job is JobState.ACCEPTED:
        return TesState.PAUSED if held else TesState.QUEUED
    return _RUNNING[job]
