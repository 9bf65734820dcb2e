"""The local site's usage records: one per ended job, from its own control files.

A local job runs once (the runner's exclusive claim): its record is run 0. Its times are
the runner's (result.json: started_at, ended_at, this machine's clock, the site's own);
its cores are what it asked for, ranks x threads (request.json), as the local snapshot
counts them; one node. A job that never started (cancelled before its runner ran it, or
a runner that never came) held nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.local.files import JobFiles, load_record
from adapters.local.records import Outcome
from adapters.local.snapshot import requested_cores
from adapters.usage import UsageRecord


def usage_record(native_id: str, request: Mapping[str, Any], outcome: Outcome,
                 raw: str) -> UsageRecord:
    """The record of a job that ended with `outcome` (pure)."""
    started = outcome.started_at
    resources = request.get("resources")
    memory = resources.get("memory_mb") if isinstance(resources, dict) else None
    ran = started is not None
    return UsageRecord(
        native_id=native_id,
        run=0,
        state=outcome.state,
        reason=outcome.reason,
        exit_code=outcome.exit_code,
        started_at=started,
        ended_at=outcome.ended_at,
        elapsed=_seconds(outcome) if ran else 0,
        cores=(requested_cores(request) or 1) if ran else 0,
        nodes=1 if ran else 0,
        source="local",
        raw=raw,
        memory_mb=memory if isinstance(memory, int) and not isinstance(memory, bool) else None,
    )


def _seconds(outcome: Outcome) -> int:
    started = outcome.started_at or outcome.ended_at
    return max(round((outcome.ended_at - started).total_seconds()), 0)


def job_usage(native_id: str, files: JobFiles) -> UsageRecord | None:
    """The record of the job in `files`, or None while it has not ended."""
    outcome = load_record(files.result, Outcome.from_json)
    if outcome is None:
        return None
    request = load_record(files.request, dict) or {}
    return usage_record(native_id, request, outcome, files.result.read_text())
