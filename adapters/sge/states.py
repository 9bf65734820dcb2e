"""Grid Engine job states and accounting failure codes, mapped onto the gateway's vocabulary.

Sources: sge_status(5) of Son of Grid Engine 8.1.9 (Debian gridengine-common), the
"Job state" table of the states qstat(1) shows, and its table of the `failed` values
qacct(1) reports (also accounting(5)); qstat(1), "Reduced Format", for the letters:
d(eletion), E(rror), h(old), q(ueued), r(unning), R(estarted), s(uspended), S(uspended
queue), t(ransfering), T(hreshold), w(aiting). Finished jobs (`z`) only appear with
`qstat -s z`, which the gateway does not use: how a job ended comes from qacct.
"""

from __future__ import annotations

import logging

from adapters.base import NativeState
from adapters.reasons import Reason

log = logging.getLogger(__name__)

Q, R = NativeState.QUEUED, NativeState.RUNNING

# qstat state string -> (gateway state, reason)
STATES: dict[str, tuple[NativeState, Reason | None]] = {
    # Pending: "qw, Rq"; "hqw" with user and/or system hold; "hRwq" held and re-queued.
    "qw": (Q, None),
    "Rq": (Q, None),
    "hqw": (Q, Reason.ON_HOLD),
    "hRwq": (Q, Reason.ON_HOLD),
    # Running / transferring: "r, hr, t" and re-run "Rr, Rt".
    "r": (R, None),
    "hr": (R, None),
    "t": (R, None),
    "Rr": (R, None),
    "Rt": (R, None),
    # Suspended: job "s, ts"; queue "S, tS"; by alarm "T, tT";
    # all suspended with re-run "Rs, Rts, RS, RtS, RT, RtT".
    "s": (R, Reason.SUSPENDED),
    "ts": (R, Reason.SUSPENDED),
    "S": (R, Reason.SUSPENDED),
    "tS": (R, Reason.SUSPENDED),
    "T": (R, Reason.SUSPENDED),
    "tT": (R, Reason.SUSPENDED),
    "Rs": (R, Reason.SUSPENDED),
    "Rts": (R, Reason.SUSPENDED),
    "RS": (R, Reason.SUSPENDED),
    "RtS": (R, Reason.SUSPENDED),
    "RT": (R, Reason.SUSPENDED),
    "RtT": (R, Reason.SUSPENDED),
    # Error: "all pending states with error" (Eqw, Ehqw, EhRqw). DRMAA calls them FAILED, but
    # an administrator can clear the error and the job then runs: not final for the gateway.
    "Eqw": (Q, Reason.SGE_ERROR_STATE),
    "Ehqw": (Q, Reason.SGE_ERROR_STATE),
    "EhRqw": (Q, Reason.SGE_ERROR_STATE),
    # Deleting: "all running and suspended states with deletion"; qacct says how it ended.
    "dr": (R, Reason.BEING_DELETED),
    "dt": (R, Reason.BEING_DELETED),
    "dRr": (R, Reason.BEING_DELETED),
    "dRt": (R, Reason.BEING_DELETED),
    "ds": (R, Reason.BEING_DELETED),
    "dS": (R, Reason.BEING_DELETED),
    "dT": (R, Reason.BEING_DELETED),
    "dRs": (R, Reason.BEING_DELETED),
    "dRS": (R, Reason.BEING_DELETED),
    "dRT": (R, Reason.BEING_DELETED),
}

# qacct `failed` codes (sge_status(5)): the description qacct prints after "N :".
FAILED_CODES: dict[int, str] = {
    0: "no failure",
    1: "assumedly before job",
    3: "before writing config",
    4: "before writing PID",
    6: "setting processor set",
    7: "before prolog",
    8: "in prolog",
    9: "before pestart",
    10: "in pestart",
    11: "before job",
    12: "before pestop",
    13: "in pestop",
    14: "before epilog",
    15: "in epilog",
    16: "releasing processor set",
    17: "through signal",
    18: "shepherd returned error",
    19: "before writing exit_status",
    20: "found unexpected error file",
    21: "in recognizing job",
    24: "migrating (checkpointing jobs)",
    25: "rescheduling",
    26: "opening output file",
    27: "searching requested shell",
    28: "changing to working directory",
    29: "AFS setup",
    30: "application error returned",
    31: "accessing sgepasswd file",
    32: "entry is missing in password file",
    33: "wrong password",
    34: "communicating with Grid Engine Helper Service",
    35: "before job in Grid Engine Helper Service",
    36: "checking configured daemons",
    # "ran, but killed due to exceeding run time limit" (h_rt, h_cpu or h_vmem).
    37: "qmaster enforced h_rt, h_cpu, or h_vmem limit",
    38: "adding supplementary group",
    # "ran, but killed by a signal (perhaps due to exceeding resources), task died, shepherd
    # died (e.g. node crash), etc." qdel and h_rt both end here with exit_status 137.
    100: "assumedly after job",
}
# Codes meaning the job ran and was killed from outside.
KILLED_CODES = frozenset({17, 37, 100})
# Codes meaning the job itself never started: the shepherd failed while setting it up
# (up to "before job", and the setup steps after it: output file, shell, directory, AFS,
# password, helper service, daemons, groups).
BEFORE_JOB_CODES = frozenset({1, 3, 4, 6, 7, 8, 9, 10, 11, 21, 26, 27, 28, 29, 31, 32, 33,
                              34, 35, 36, 38})
# The run was ended to run the job again (`qmod -rj`, a queue's rerun).
RESCHEDULED = 25


def native_state(raw: str) -> tuple[NativeState, Reason | None]:
    """The gateway state and reason for a qstat state string; UNKNOWN if unmapped."""
    mapped = STATES.get(raw.strip())
    if mapped is None:
        log.warning("unknown Grid Engine job state %r: reported as UNKNOWN", raw)
        return NativeState.UNKNOWN, None
    return mapped
