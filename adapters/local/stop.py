"""Cancelling a local job: a marker for its runner, then signals to its processes."""

from __future__ import annotations

import signal

from adapters.base import NativeState
from adapters.local.files import JobFiles, load_record, write_atomic
from adapters.local.ownership import claim_job, record_outcome
from adapters.local.procs import job_processes, sandbox_launchers, signal_processes
from adapters.local.records import ChildRecord, Claim, LaunchPlan, Outcome, utcnow
from adapters.reasons import Reason


def cancel_job(files: JobFiles) -> None:
    """Stop the job whose request `files` holds (see LocalAdapter.cancel)."""
    if files.result.exists():
        return
    write_atomic(files.cancel, f"cancel requested at {utcnow().isoformat()}\n".encode())
    if claim_job(files, "cancel"):
        reason = Reason.CANCELLED_BEFORE_START
        outcome = Outcome(NativeState.CANCELLED, "cancelled", None, reason, None, utcnow())
        record_outcome(files, outcome)
        return
    claim = load_record(files.claim, Claim.from_json)
    child = load_record(files.child, ChildRecord.from_json)
    if child is None:
        return  # the runner sees the marker before it starts the program
    runner_alive = claim is not None and claim.owner.is_alive()
    ancestor = claim.owner.pid if claim is not None and runner_alive else None
    # Without a runner nobody would escalate later, so kill outright.
    sig = signal.SIGTERM if runner_alive else signal.SIGKILL
    pids = set(job_processes(child.process, ancestor))
    plan = load_record(files.request, LaunchPlan.from_json)
    if sig == signal.SIGTERM and plan is not None and plan.sandbox is not None:
        pids -= sandbox_launchers(child.process)
    signal_processes(sorted(pids), sig)
