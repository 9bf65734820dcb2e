"""Who owns a job, and the one write its owner makes at the end.

Exactly one process ever holds a job's claim: the runner that executes it, or
the adapter when it cancels (or gives up on) a job no runner has claimed. Only
the holder writes result.json, except after its death (see LocalAdapter.status).
"""

from __future__ import annotations

from adapters.local.files import JobFiles, create_exclusive, encode_json, write_json_atomic
from adapters.local.procs import ProcessId
from adapters.local.records import Claim, Outcome, utcnow


def claim_job(files: JobFiles, by: str) -> bool:
    """Take ownership of the job for this process; False when someone already holds it."""
    claim = Claim(ProcessId.current(), by, utcnow())
    return create_exclusive(files.claim, encode_json(claim.to_json()))


def record_outcome(files: JobFiles, outcome: Outcome) -> None:
    """Write result.json (atomically)."""
    write_json_atomic(files.result, outcome.to_json())
