"""qacct -j: usage records, one per run of a job (a rescheduled job has a record per run). Pure.

Format and the `failed` codes: adapters.sge.accounting and adapters.sge.states
(qacct(1), accounting(5), sge_status(5) of Son of Grid Engine 8.1.9). qacct prints a job's
records in the order qmaster appended them to its accounting file, so the n-th block of a
job number is its run n. A run ended by `qmod -rj` (or a queue's rerun) is a block with
`failed 25 : rescheduling`; Grid Engine 8.1.9 writes it at once with no start or end
time and `ru_wallclock 0s` (seen on the testbed), so such a run's record holds no time.
`ru_wallclock` is the run's wall-clock time ("20s"; older releases print plain seconds);
`slots` the cores it held. With `-m` qacct prints the master task's record only, whose
host is one node: the record does not say how many hosts a parallel job spanned.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime, tzinfo

from adapters.base import NativeState
from adapters.batch.text import integer, timestamp
from adapters.reasons import Reason, StatusReason, because
from adapters.sge.accounting import accounting_command, block_fields, blocks, record_status
from adapters.sge.arrays import record_id, split
from adapters.sge.commands import SgeCommands
from adapters.sge.states import BEFORE_JOB_CODES, FAILED_CODES, RESCHEDULED
from adapters.sge.status import JOB_ID
from adapters.transport import CommandResult
from adapters.usage import UsageRecord

_SECONDS = re.compile(r"(?P<seconds>[0-9]+(?:\.[0-9]*)?)s?")


def usage_commands(commands: SgeCommands, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
    """One `qacct -m -j ID` per valid id (qacct -j takes one job; an array task's
    records come with its whole job's)."""
    return [accounting_command(commands, i)
            for i in dict.fromkeys(split(n)[0] for n in native_ids) if JOB_ID.matches(i)]


def parse_usage(result: CommandResult, tz: tzinfo) -> list[UsageRecord]:
    """A record for each run qacct printed (it only prints runs that ended)."""
    records = []
    runs: dict[str, int] = {}
    for block in blocks(result):
        fields = block_fields(block)
        if not JOB_ID.matches(fields.get("jobnumber", "")):
            continue
        native_id = record_id(fields)
        run = runs.get(native_id, 0)
        runs[native_id] = run + 1
        records.append(_record(native_id, run, fields, block, tz))
    return records


def _record(native_id: str, run: int, fields: dict[str, str], block: str,
            tz: tzinfo) -> UsageRecord:
    failed_field = fields.get("failed", "0")
    failed = integer(failed_field.partition(":")[0]) or 0
    said = failed_field.partition(":")[2].strip() or FAILED_CODES.get(failed, "")
    state: NativeState
    reason: StatusReason | None
    code: int | None
    if failed == RESCHEDULED:
        state, reason, code = NativeState.CANCELLED, Reason.REQUEUED, None
    elif failed in BEFORE_JOB_CODES:
        # The exit_status of a job that never started is not the job's.
        state, reason, code = (NativeState.FAILED,
                               because(Reason.FAILED_AT_START, f"failed {failed}: {said}"), None)
    else:
        status = record_status(fields, tz)
        state, reason, code = status.state, status.reason, status.exit_code
    started = timestamp(fields.get("start_time"), tz)
    ended = timestamp(fields.get("end_time"), tz)
    return UsageRecord(
        native_id=native_id,
        run=run,
        state=state,
        reason=reason,
        exit_code=code,
        started_at=started,
        ended_at=ended,
        elapsed=_elapsed(fields.get("ru_wallclock"), started, ended),
        cores=integer(fields.get("slots")) or 1,
        nodes=1,
        source="qacct",
        raw=block,
    )


def _elapsed(wallclock: str | None, started: datetime | None, ended: datetime | None) -> int:
    """ru_wallclock, else end - start from the site's own times, else 0."""
    match = _SECONDS.fullmatch(wallclock.strip()) if wallclock else None
    if match is not None:
        return int(float(match["seconds"]))
    if started is not None and ended is not None:
        return max(int((ended - started).total_seconds()), 0)
    return 0
