"""The PBS accounting log: usage records from E (job end) and R (rerun) records. Pure.

Format: adapters.pbs.accounting. OpenPBS writes R records as it writes E records
(src/server/accounting.c, account_jobend: "Currently, this is used for 'E' and 'R'
records"): start, end, Exit_status, resources_used.*, run_count, so each run of a rerun
job has its own record; run_count counts the runs so far, the record's run is
run_count - 1. TORQUE writes the same record types and keys (Adaptive Computing, TORQUE
Administrator Guide, "Accounting Records"), with exec_host listing one `host/slot` per
core (`napali/0+napali/1`) and, from 4.2, total_execution_slots and unique_node_count;
PBS Professional lists `host/slot*ncpus` per chunk and resources_used.ncpus. A D record
says the job was deleted (by `requestor`): deleted while queued, there is no E record
with a start, and the run held nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime

from adapters.base import NativeState
from adapters.batch.text import duration, integer
from adapters.pbs.accounting import AccountingRecord, accounting_command, epoch, found_records
from adapters.pbs.commands import PbsCommands
from adapters.pbs.states import JOB_EXEC, ended
from adapters.reasons import Reason, StatusReason, because
from adapters.transport import CommandResult
from adapters.usage import UsageRecord

# Exit_status values (src/include/job.h) meaning the job itself never started: MoM could
# not exec it, a hook rejected it, or its credentials were refused.
START_FAILURES = frozenset({-1, -2, -3, -10, -13, -16, -17, -21, -23})
# A PBS size: `2gb`, `512mb`, `1024kb` (pbs_resources(7B): b, kb, mb, gb, tb; w for words).
_SIZE = re.compile(r"(?P<number>[0-9]+)(?P<unit>[kmgt]?b)", re.IGNORECASE)
_MB_PER_UNIT = {"b": 1 / 1024**2, "kb": 1 / 1024, "mb": 1, "gb": 1024, "tb": 1024**2}
# One exec_host entry: `host/slot`, `host/slot*ncpus` (PBS Pro), `host/0-3` or `host/0,2`
# (TORQUE 6 ranges).
_EXEC_HOST = re.compile(r"(?P<host>[^/+]+)/(?P<slots>[0-9,-]+)(?:\*(?P<ncpus>[0-9]+))?")


def usage_command(
    commands: PbsCommands, native_ids: Sequence[str], accounting_dir: str
) -> tuple[str, ...]:
    """The R, E and D records of these jobs from every log file."""
    return accounting_command(commands, native_ids, accounting_dir, types="RED")


def parse_usage(result: CommandResult) -> list[UsageRecord]:
    """A record for each run an R or E record ended."""
    records = sorted(found_records(result), key=lambda r: _logged(r.logged_at))
    deleted = {r.native_id: r for r in records if r.type == "D"}
    usage = []
    runs: dict[str, int] = {}
    for record in records:
        if record.type not in ("R", "E"):
            continue
        ordinal = runs.get(record.native_id, 0)
        runs[record.native_id] = ordinal + 1
        run_count = integer(record.fields.get("run_count"))
        run = run_count - 1 if run_count else ordinal
        usage.append(_record(record, run, deleted.get(record.native_id)))
    return usage


def _logged(at: str) -> datetime:
    return datetime.strptime(at, "%m/%d/%Y %H:%M:%S")


def _record(record: AccountingRecord, run: int, deletion: AccountingRecord | None) -> UsageRecord:
    fields = record.fields
    started, ended_at = epoch(fields.get("start")), epoch(fields.get("end"))
    exit_status = integer(fields.get("Exit_status"))
    state, reason, code = ended(exit_status, None)
    if record.type == "R":
        state, reason, code = NativeState.CANCELLED, Reason.REQUEUED, None
    elif deletion is not None:
        who = deletion.fields.get("requestor", "")
        state = NativeState.CANCELLED
        reason = because(Reason.DELETED, f"by {who}", " ") if who else Reason.DELETED
    elif exit_status in START_FAILURES:
        reason = _start_failure(exit_status)
    ran = started is not None
    return UsageRecord(
        native_id=record.native_id,
        run=run,
        state=state,
        reason=reason,
        exit_code=code,
        started_at=started,
        ended_at=ended_at,
        elapsed=_elapsed(fields, started, ended_at) if ran else 0,
        cores=_cores(fields) if ran else 0,
        nodes=_nodes(fields) if ran else 0,
        source="pbs-accounting",
        raw=record.line,
        memory_mb=_megabytes(fields.get("Resource_List.mem")),
        gpus=integer(fields.get("Resource_List.ngpus")) or 0,
    )


def _start_failure(exit_status: int | None) -> StatusReason:
    return because(Reason.FAILED_AT_START,
                   JOB_EXEC.get(exit_status or 0, f"Exit_status {exit_status}"))


def _elapsed(fields: dict[str, str], started: datetime | None, ended: datetime | None) -> int:
    """resources_used.walltime, else end - start (the server's own times)."""
    walltime = duration(fields.get("resources_used.walltime"))
    if walltime is not None:
        return walltime
    if started is not None and ended is not None:
        return max(int((ended - started).total_seconds()), 0)
    return 0


def _exec_hosts(fields: dict[str, str]) -> list[tuple[str, int]]:
    """(host, cores) of each exec_host entry."""
    entries = []
    for entry in fields.get("exec_host", "").split("+"):
        match = _EXEC_HOST.fullmatch(entry.strip())
        if match is None:
            continue
        if match["ncpus"] is not None:
            count = int(match["ncpus"])
        else:
            count = sum(_span(part) for part in match["slots"].split(","))
        entries.append((match["host"], count))
    return entries


def _span(part: str) -> int:
    low, _, high = part.partition("-")
    first, last = integer(low), integer(high) if high else integer(low)
    return last - first + 1 if first is not None and last is not None and last >= first else 0


def _cores(fields: dict[str, str]) -> int:
    for key in ("resources_used.ncpus", "total_execution_slots", "Resource_List.ncpus"):
        value = integer(fields.get(key))
        if value:
            return value
    return sum(count for _, count in _exec_hosts(fields)) or 1


def _nodes(fields: dict[str, str]) -> int:
    for key in ("Resource_List.nodect", "unique_node_count"):
        value = integer(fields.get(key))
        if value:
            return value
    return len({host for host, _ in _exec_hosts(fields)}) or 1


def _megabytes(value: str | None) -> int | None:
    match = _SIZE.fullmatch(value.strip()) if value else None
    if match is None:
        return None
    return round(int(match["number"]) * _MB_PER_UNIT[match["unit"].lower()])
