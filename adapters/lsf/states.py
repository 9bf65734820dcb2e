"""LSF job states and termination reasons, mapped onto the gateway's vocabulary.

Sources: IBM Spectrum LSF 10.1 bjobs(1), "Description" / job status (PEND, PROV, PSUSP,
RUN, USUSP, SSUSP, DONE, EXIT, UNKWN, WAIT, ZOMBI; also the map in PSI/J's LSF executor,
src/psij/executors/batch/lsf.py, citing the same page); the termination reasons bjobs
prints as EXIT_REASON ("TERM_RUNLIMIT: job killed after reaching LSF run time limit",
"TERM_OWNER: job killed by owner", "TERM_ADMIN: job killed by root or LSF administrator").
"""

from __future__ import annotations

import logging

from adapters.base import NativeState
from adapters.reasons import Reason, StatusReason, scheduler_says

log = logging.getLogger(__name__)

Q, R = NativeState.QUEUED, NativeState.RUNNING

STATES: dict[str, tuple[NativeState, Reason | None]] = {
    # PEND: "The job is pending, that is, it has not yet been started."
    "PEND": (Q, None),
    # PROV: "dispatched to a power-saved host that is waking up".
    "PROV": (Q, Reason.HOST_WAKING_UP),
    # PSUSP: "suspended, either by its owner or the LSF administrator, while pending".
    "PSUSP": (Q, Reason.SUSPENDED_WHILE_PENDING),
    # RUN: "the job is currently running".
    "RUN": (R, None),
    # USUSP: "suspended, either by its owner or the LSF administrator, while running".
    "USUSP": (R, Reason.SUSPENDED),
    # SSUSP: "suspended by LSF" (load, run windows, preemption).
    "SSUSP": (R, Reason.SUSPENDED_BY_LSF),
    # DONE: "finished normally with a zero exit value".
    "DONE": (NativeState.COMPLETED, None),
    # EXIT: "finished with a non-zero exit value" or killed; see the termination reason.
    "EXIT": (NativeState.FAILED, Reason.NON_ZERO_EXIT),
    # UNKWN: "mbatchd has lost contact with the sbatchd on the host" where the job runs.
    "UNKWN": (NativeState.UNKNOWN, Reason.HOST_LOST),
    # WAIT: "for jobs submitted to a chunk job queue, members of a chunk job waiting to run".
    "WAIT": (Q, None),
    # ZOMBI: killed while its host was unreachable; LSF settles it when the host returns.
    "ZOMBI": (R, Reason.BEING_KILLED_HOST_UNREACHABLE),
}


def native_state(stat: str) -> tuple[NativeState, Reason | None]:
    mapped = STATES.get(stat.strip().upper())
    if mapped is None:
        log.warning("unknown LSF job state %r: reported as UNKNOWN", stat)
        return NativeState.UNKNOWN, None
    return mapped


def exit_outcome(exit_reason: str) -> tuple[NativeState, StatusReason] | None:
    """An EXIT job's termination reason, when it says more than its exit code."""
    if "TERM_RUNLIMIT" in exit_reason:
        return NativeState.FAILED, Reason.TIMEOUT
    if "TERM_OWNER" in exit_reason or "TERM_ADMIN" in exit_reason:
        return NativeState.CANCELLED, scheduler_says(exit_reason)
    return None
