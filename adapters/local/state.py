"""Where a local job stands, read from its directory; a lost runner's outcome recorded."""

from __future__ import annotations

import signal
import time

from adapters.base import JobStatus, NativeState
from adapters.local.files import JobFiles, load_record
from adapters.local.ownership import claim_job, record_outcome
from adapters.local.procs import job_processes, signal_processes
from adapters.local.records import ChildRecord, Claim, Outcome, utcnow
from adapters.reasons import Reason, because

RUNNER_VANISHED = "runner process disappeared without recording an outcome"
LOST_REASON = because(Reason.LOST, RUNNER_VANISHED)


def job_status(native_id: str, files: JobFiles, runner_start_timeout: float) -> JobStatus | None:
    """The job's status; None if its directory holds no request (yet)."""
    outcome = load_record(files.result, Outcome.from_json)
    if outcome is not None:
        return final_status(native_id, outcome)
    if not files.request.exists():
        return None
    claim = load_record(files.claim, Claim.from_json)
    if claim is None:
        if not _runner_overdue(files, runner_start_timeout):
            return JobStatus(native_id, NativeState.QUEUED, "pending")
        # The runner we started never claimed the job. Claim it ourselves, so a late
        # runner cannot start it, and say why it failed.
        if claim_job(files, "adapter"):
            reason = because(
                Reason.LOST, f"the job runner did not start within "
                f"{runner_start_timeout:g} s; see {files.runner_log}"
            )
            outcome = Outcome(NativeState.FAILED, "lost", None, reason, None, utcnow())
            record_outcome(files, outcome)
            return final_status(native_id, outcome)
        claim = load_record(files.claim, Claim.from_json)
        if claim is None:
            return JobStatus(native_id, NativeState.QUEUED, "pending")
    child = load_record(files.child, ChildRecord.from_json)
    if claim.owner.is_alive():
        if child is None:
            return JobStatus(native_id, NativeState.QUEUED, "starting")
        return JobStatus(native_id, NativeState.RUNNING, "running", started_at=child.started_at)
    # The owner is gone. It may have recorded the outcome just before exiting.
    outcome = load_record(files.result, Outcome.from_json)
    if outcome is None:
        outcome = _record_lost(files, child)
    return final_status(native_id, outcome)


def final_status(native_id: str, outcome: Outcome) -> JobStatus:
    """The status a recorded outcome says."""
    return JobStatus(
        native_id=native_id,
        state=outcome.state,
        raw_state=outcome.raw_state,
        reason=outcome.reason,
        exit_code=outcome.exit_code,
        started_at=outcome.started_at,
        ended_at=outcome.ended_at,
    )


def _record_lost(files: JobFiles, child: ChildRecord | None) -> Outcome:
    """The runner died without an outcome: stop what it left and record that."""
    if child is not None:
        signal_processes(job_processes(child.process, None), signal.SIGKILL)
    started = child.started_at if child else None
    if files.cancel.exists():
        reason = because(Reason.CANCEL_REQUESTED, RUNNER_VANISHED, "; ")
        outcome = Outcome(NativeState.CANCELLED, "cancelled", None, reason, started, utcnow())
    else:
        outcome = Outcome(NativeState.FAILED, "lost", None, LOST_REASON, started, utcnow())
    # Nobody else can write it any more: the claim's holder is dead.
    record_outcome(files, outcome)
    return outcome


def _runner_overdue(files: JobFiles, runner_start_timeout: float) -> bool:
    try:
        spawned_at = files.spawned.stat().st_mtime
    except FileNotFoundError:
        return False  # no runner was ever started: a recovering gateway will submit again
    return time.time() - spawned_at > runner_start_timeout
