"""Slurm job states, mapped onto the gateway's vocabulary.

Source: Slurm 22.05 squeue(1) and sacct(1), section "JOB STATE CODES"
(https://slurm.schedmd.com/squeue.html#SECTION_JOB-STATE-CODES and
https://slurm.schedmd.com/sacct.html#SECTION_JOB-STATE-CODES). Both commands print the
long form with our formats (`%T`, `State`). sacct appends who cancelled a job
("CANCELLED by 2001"): only the first word is the state.
"""

from __future__ import annotations

import logging

from adapters.base import NativeState
from adapters.reasons import Reason

log = logging.getLogger(__name__)

Q, R, C, F, X = (NativeState.QUEUED, NativeState.RUNNING, NativeState.COMPLETED,
                 NativeState.FAILED, NativeState.CANCELLED)

# state -> (gateway state, reason given when the job ends in it)
STATES: dict[str, tuple[NativeState, Reason | None]] = {
    # BF BOOT_FAIL: "terminated due to launch failure, typically due to a hardware failure".
    "BOOT_FAIL": (F, Reason.BOOT_FAIL),
    # CA CANCELLED: "explicitly cancelled by the user or system administrator".
    "CANCELLED": (X, None),
    # CD COMPLETED: "terminated all processes on all nodes with an exit code of zero".
    "COMPLETED": (C, None),
    # CF CONFIGURING: "allocated resources, but are waiting for them to become ready" (booting).
    "CONFIGURING": (Q, None),
    # CG COMPLETING: "in the process of completing"; not over until accounting says so.
    "COMPLETING": (R, None),
    # DL DEADLINE: "terminated on deadline".
    "DEADLINE": (F, Reason.DEADLINE),
    # F FAILED: "terminated with non-zero exit code or other failure condition".
    "FAILED": (F, Reason.NON_ZERO_EXIT),
    # NF NODE_FAIL: "terminated due to failure of one or more allocated nodes".
    "NODE_FAIL": (F, Reason.NODE_FAIL),
    # OOM OUT_OF_MEMORY: "experienced out of memory error".
    "OUT_OF_MEMORY": (F, Reason.OUT_OF_MEMORY),
    # PD PENDING: "awaiting resource allocation".
    "PENDING": (Q, None),
    # PR PREEMPTED: "terminated due to preemption" (a requeued job shows PENDING again).
    "PREEMPTED": (F, Reason.PREEMPTED),
    # R RUNNING: "currently has an allocation".
    "RUNNING": (R, None),
    # RD RESV_DEL_HOLD: "held after requested reservation was deleted".
    "RESV_DEL_HOLD": (Q, None),
    # RF REQUEUE_FED: "being requeued by a federation".
    "REQUEUE_FED": (Q, None),
    # RH REQUEUE_HOLD: "held job is being requeued".
    "REQUEUE_HOLD": (Q, None),
    # RQ REQUEUED: "completing job is being requeued".
    "REQUEUED": (Q, None),
    # RS RESIZING: "about to change size".
    "RESIZING": (R, None),
    # RV REVOKED: "sibling was removed from cluster due to other cluster starting the job".
    "REVOKED": (X, Reason.REVOKED),
    # SI SIGNALING: "being signaled".
    "SIGNALING": (R, None),
    # SE SPECIAL_EXIT: "requeued in a special state" (held until released).
    "SPECIAL_EXIT": (Q, None),
    # SO STAGE_OUT: "staging out files".
    "STAGE_OUT": (R, None),
    # ST STOPPED: "has an allocation, but execution has been stopped with SIGSTOP".
    "STOPPED": (R, None),
    # S SUSPENDED: "has an allocation, but execution has been suspended".
    "SUSPENDED": (R, None),
    # TO TIMEOUT: "terminated upon reaching its time limit".
    "TIMEOUT": (F, Reason.TIMEOUT),
}


def native_state(raw: str) -> tuple[NativeState, Reason | None]:
    """The gateway state and the final reason for a state Slurm printed; UNKNOWN if unmapped."""
    words = raw.split()
    base = words[0].rstrip("+").upper() if words else ""
    mapped = STATES.get(base)
    if mapped is None:
        log.warning("unknown Slurm job state %r: reported as UNKNOWN", raw)
        return NativeState.UNKNOWN, None
    return mapped


# A run's allocation line in `sacct --duplicates` that is not the job's last: the job was
# put back in the queue and this run is over. REQUEUED: "completing job is being requeued"
# (`scontrol requeue`); the others are the hold variants of the same (see STATES).
_REQUEUE_STATES = frozenset({"REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "SPECIAL_EXIT"})


def run_state(raw: str) -> tuple[NativeState, Reason | None]:
    """How one run ended, for usage records: as `native_state`, except that a run ended by
    a requeue is over (CANCELLED, REQUEUED) although the job waits again."""
    words = raw.split()
    if words and words[0].rstrip("+").upper() in _REQUEUE_STATES:
        return NativeState.CANCELLED, Reason.REQUEUED
    return native_state(raw)
