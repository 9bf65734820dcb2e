"""PBS job states and exit statuses, mapped onto the gateway's vocabulary.

Sources (OpenPBS, github.com/openpbs/openpbs): doc/man1/qstat.1B ("The job's state") and
doc/man1/pbs_job_attributes.7B (job_state, Exit_status); src/include/job.h for the special
exit values JOB_EXEC_* that PBS sets when a job could not run or was killed by a limit.
An Exit_status of 256 + N means the job was killed by signal N (PSI/J's PBS executor reads
265, SIGKILL, as a cancelled job; src/psij/executors/batch/pbspro.py).
"""

from __future__ import annotations

import logging

from adapters.base import NativeState
from adapters.reasons import Reason, StatusReason, because, scheduler_says

log = logging.getLogger(__name__)

Q, R = NativeState.QUEUED, NativeState.RUNNING

# job_state letter -> (gateway state, reason); F and X are settled by Exit_status.
STATES: dict[str, tuple[NativeState, Reason | None]] = {
    # B Begun: "Array job has at least one subjob running".
    "B": (R, None),
    # E Exiting: "Job is exiting after having run"; final only once it is F.
    "E": (R, None),
    # F Finished: "completed execution, job failed during execution, or job was deleted".
    "F": (NativeState.COMPLETED, None),
    # H Held: "Job is held".
    "H": (Q, Reason.HELD),
    # M Moved: "Job was moved to another server".
    "M": (Q, Reason.MOVED),
    # Q Queued: "Job is queued".
    "Q": (Q, None),
    # R Running: "Job is running".
    "R": (R, None),
    # S Suspended: "Job is suspended".
    "S": (R, Reason.SUSPENDED),
    # T Transiting: "Job is being moved to new location".
    "T": (Q, Reason.BEING_MOVED),
    # U "Cycle-harvesting job is suspended due to keyboard activity".
    "U": (R, Reason.SUSPENDED_WORKSTATION_BUSY),
    # W Waiting: "waiting for its submitter-assigned start time to be reached".
    "W": (Q, Reason.WAITING_FOR_START_TIME),
    # X Expired: "Subjob has completed execution or has been deleted".
    "X": (NativeState.COMPLETED, None),
}
FINISHED = frozenset({"F", "X"})

# Exit_status below zero (src/include/job.h): the job did not run, or PBS stopped it.
JOB_EXEC: dict[int, str] = {
    -1: "JOB_EXEC_FAIL1: job exec failed, before files, no retry",
    -2: "JOB_EXEC_FAIL2: job exec failed, after files, no retry",
    -3: "JOB_EXEC_RETRY: job execution failed, do retry",
    -4: "JOB_EXEC_INITABT: job aborted on MoM initialization",
    -5: "JOB_EXEC_INITRST: job aborted on MoM init, checkpoint, no migrate",
    -6: "JOB_EXEC_INITRMG: job aborted on MoM init, checkpoint, ok migrate",
    -7: "JOB_EXEC_BADRESRT: job restart failed",
    -10: "JOB_EXEC_FAILUID: invalid uid/gid for job",
    -11: "JOB_EXEC_RERUN: job rerun",
    -12: "JOB_EXEC_CHKP: job was checkpointed and killed",
    -13: "JOB_EXEC_FAIL_PASSWORD: job failed due to a bad password",
    -14: "JOB_EXEC_RERUN_SIS_FAIL: job rerun",
    -15: "JOB_EXEC_QUERST: requeue job for restart from checkpoint",
    -16: "JOB_EXEC_FAILHOOK_RERUN: a hook rejected the job, requeued",
    -17: "JOB_EXEC_FAILHOOK_DELETE: a hook rejected the job, deleted",
    -18: "JOB_EXEC_HOOK_RERUN: a hook requested the job be requeued",
    -19: "JOB_EXEC_HOOK_DELETE: a hook requested the job be deleted",
    -20: "JOB_EXEC_RERUN_MS_FAIL: mother superior connection failed",
    -21: "JOB_EXEC_FAIL_SECURITY: security breach in PBS directory",
    -22: "JOB_EXEC_HOOKERROR: hook error or timeout",
    -23: "JOB_EXEC_FAIL_KRB5: no kerberos credentials supplied",
    -24: "JOB_EXEC_KILL_NCPUS_BURST: exceeded ncpus (burst)",
    -25: "JOB_EXEC_KILL_NCPUS_SUM: exceeded ncpus (sum)",
    -26: "JOB_EXEC_KILL_VMEM: exceeded vmem",
    -27: "JOB_EXEC_KILL_MEM: exceeded mem",
    -28: "JOB_EXEC_KILL_CPUT: exceeded cput",
    -29: "JOB_EXEC_KILL_WALLTIME: exceeded walltime",
    -30: "JOB_EXEC_JOINJOB: join job error",
}
KILL_WALLTIME = -29
SIGNAL_BASE = 256


def native_state(letter: str) -> tuple[NativeState, Reason | None]:
    """The gateway state of a job_state letter; UNKNOWN if unmapped. F/X: see `ended`."""
    mapped = STATES.get(letter.strip())
    if mapped is None:
        log.warning("unknown PBS job state %r: reported as UNKNOWN", letter)
        return NativeState.UNKNOWN, None
    return mapped


def ended(
    exit_status: int | None, comment: str | None
) -> tuple[NativeState, StatusReason | None, int | None]:
    """How a finished job ended, from its Exit_status: state, reason, shell-style exit code."""
    said = (comment or "").lower()
    if exit_status is None:
        # Deleted before it ran, most likely; the adapter reports CANCELLED if it asked to.
        why = scheduler_says(comment) if comment else Reason.NO_EXIT_STATUS
        return NativeState.FAILED, why, None
    if exit_status == 0:
        return NativeState.COMPLETED, None, 0
    if exit_status == KILL_WALLTIME or ("walltime" in said and "exceeded" in said):
        code = exit_status - SIGNAL_BASE + 128 if exit_status >= SIGNAL_BASE else None
        return NativeState.FAILED, Reason.TIMEOUT, code
    if exit_status < 0:
        named = JOB_EXEC.get(exit_status)
        why = scheduler_says(named) if named else because(Reason.PBS_EXIT_STATUS, exit_status, " ")
        return NativeState.FAILED, why, None
    if exit_status >= SIGNAL_BASE:
        signal = exit_status - SIGNAL_BASE
        return NativeState.FAILED, because(Reason.KILLED_BY_SIGNAL, signal, " "), 128 + signal
    return NativeState.FAILED, Reason.NON_ZERO_EXIT, exit_status
