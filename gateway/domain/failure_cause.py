"""Why a failed job failed, named from the reason the adapters recorded (pure): for a
retry policy (workflows) and for a standard API's error states (GA4GH TES)."""

from __future__ import annotations

from adapters.reasons import Reason
from workflows.retry import FailureCause

__all__ = ["FailureCause", "failure_cause"]

# Reason prefixes, in the order they are tried.
_CAUSES = (
    (Reason.NODE_FAIL, FailureCause.NODE_FAIL),
    (Reason.PREEMPTED, FailureCause.PREEMPTED),
    (Reason.BOOT_FAIL, FailureCause.BOOT_FAIL),
    (Reason.FAILED_AT_START, FailureCause.BOOT_FAIL),
    (Reason.TIMEOUT, FailureCause.TIMEOUT),
    (Reason.OUT_OF_MEMORY, FailureCause.OUT_OF_MEMORY),
    (Reason.NON_ZERO_EXIT, FailureCause.NONZERO_EXIT),
    (Reason.KILLED_BY_SIGNAL, FailureCause.NONZERO_EXIT),
)


def failure_cause(reason: str | None, exit_code: int | None) -> FailureCause | None:
    """The cause of a failure with this reason and exit code (None: not the program's and
    not one the site names, e.g. a stage-in failure)."""
    text = reason or ""
    for prefix, cause in _CAUSES:
        if text.startswith(prefix):
            return cause
    return FailureCause.NONZERO_EXIT if exit_code not in (None, 0) else None
