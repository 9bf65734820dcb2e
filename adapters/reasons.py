"""The one vocabulary of reasons: why a job waits, runs the way it does, or ended.

It lives in `adapters` because adapters may not import `gateway`, while the gateway may
import adapters: both reach it here, and `gateway.domain.states` re-exports `Reason`.
The strings are what the API has always shown (`Attempt.reason`, `Job.reason`,
events), so clients that match on them keep working.

A reason is one of three things, and its type says which (mypy rejects a bare literal):

- a code: `Reason.TIMEOUT`;
- a code with detail: `because(Reason.SUBMIT_REJECTED, message)` -> "SUBMIT_REJECTED: ...";
- the scheduler's own words, passed through verbatim as data: `scheduler_says(text)`
  (Slurm's pending reason, a PBS comment, LSF's EXIT_REASON), or `recorded(text)` for
  a reason read back from a record an adapter wrote earlier.
"""

from __future__ import annotations

from enum import StrEnum
from typing import NewType


class Reason(StrEnum):
    """Every reason code the gateway or an adapter writes."""

    # How a run ended (adapters, from the scheduler's state or accounting).
    TIMEOUT = "TIMEOUT"
    NON_ZERO_EXIT = "NonZeroExitCode"
    BOOT_FAIL = "BOOT_FAIL"
    DEADLINE = "DEADLINE"
    NODE_FAIL = "NODE_FAIL"
    OUT_OF_MEMORY = "OUT_OF_MEMORY"
    PREEMPTED = "PREEMPTED"
    REVOKED = "REVOKED"
    # One run of a job the scheduler put back in the queue (usage records; the job goes on).
    REQUEUED = "REQUEUED"
    # The scheduler could not start the run (followed by its own words): Grid Engine's
    # `failed` codes before the job, PBS's JOB_EXEC_FAIL*. Slurm says BOOT_FAIL.
    FAILED_AT_START = "failed at start"
    KILLED_BY_SIGNAL = "killed by signal"  # followed by the signal number
    CANCELLED = "cancelled"
    CANCEL_REQUESTED = "cancel requested"
    CANCELLED_BEFORE_START = "cancelled before start"
    VANISHED_AFTER_CANCEL = (
        "cancelled before it ran; the scheduler keeps no record of jobs deleted while pending"
    )
    NO_EXIT_STATUS = "finished without an exit status"
    DELETED = "deleted"  # PBS accounting: followed by "by <requestor>" when known
    PBS_EXIT_STATUS = "PBS exit status"  # followed by an Exit_status job.h does not name
    LOST = "LOST"
    # The local site's runner could not run the job (followed by why).
    LAUNCH_FAILED = "LaunchFailed"
    CANNOT_OPEN_OUTPUT = "cannot open the job's output files"
    CANNOT_PREPARE_SANDBOX = "cannot prepare the job's sandbox"
    BAD_JOB_REQUEST = "bad job request"
    RUNNER_ERROR = "runner error"
    RUNNER_GOT_SIGNAL = "runner got signal"  # followed by "<n>; job stopped"
    UNREADABLE_STATE = "cannot read job state"

    # Why a job waits or is held (non-final states).
    HELD = "held"
    ON_HOLD = "on hold"
    SUSPENDED = "suspended"
    SUSPENDED_WHILE_PENDING = "suspended while pending"
    SUSPENDED_BY_LSF = "suspended by LSF"
    SUSPENDED_WORKSTATION_BUSY = "suspended (workstation busy)"
    MOVED = "moved to another server"
    BEING_MOVED = "being moved"
    BEING_DELETED = "being deleted"
    WAITING_FOR_START_TIME = "waiting for its start time"
    HOST_WAKING_UP = "host is waking up"
    HOST_LOST = "LSF lost contact with the execution host"
    BEING_KILLED_HOST_UNREACHABLE = "being killed; execution host unreachable"
    SGE_ERROR_STATE = (
        "Grid Engine put the job in error state; it will not start until an administrator "
        "clears it (qmod -cj); `qstat -j` shows why"
    )

    # Why a job waits at the gateway, in Slurm's words (squeue's pending reasons).
    DEPENDENCY = "Dependency"
    DEPENDENCY_NEVER_SATISFIED = "DependencyNeverSatisfied"
    JOB_ARRAY_TASK_LIMIT = "JobArrayTaskLimit"

    # The gateway's own decisions.
    CANCELLED_BY_USER = "cancelled by user"
    EXIT_CODE = "exit code"  # followed by the code, when the scheduler gave no reason
    SUBMIT_REJECTED = "SUBMIT_REJECTED"
    STAGE_IN_FAILED = "STAGE_IN_FAILED"
    STAGE_OUT_FAILED = "STAGE_OUT_FAILED"


ReasonText = NewType("ReasonText", str)
"""A reason that is more than a code: built only by the functions below."""

StatusReason = Reason | ReasonText
"""What a status or outcome may carry as its reason."""


def because(code: Reason, detail: object, sep: str = ": ") -> ReasonText:
    """A code followed by its detail: "SUBMIT_REJECTED: <message>", "killed by signal 9"."""
    return ReasonText(f"{code}{sep}{detail}")


def scheduler_says(words: str) -> ReasonText:
    """The scheduler's own words (a pending reason, a comment), kept verbatim as data."""
    return ReasonText(words)


def recorded(text: str) -> ReasonText:
    """A reason read back from a record an adapter wrote earlier (written from this module)."""
    return ReasonText(text)
