"""qacct -j: the accounting record of a finished job. Pure.

Format (qacct(1) with -j, and -m for master tasks only; seen from Debian's gridengine
8.1.9 qacct and on the testbed): records separated by
a line of `=`, one `key value` per line (qname, hostname, owner, jobname, jobnumber,
qsub_time, start_time, end_time, granted_pe, slots, failed, exit_status, ru_wallclock,
..., category). `failed` is "N : description" (sge_status(5)), exit_status follows shell
conventions (128 + signal), times are asctime in the site's local time, `-/-` when unset.
`category` holds the job's hard requests, e.g. "-l h_rt=60 -pe mpi 2".
An unknown job: "error: job id N not found" on stderr, exit 1.
"""

from __future__ import annotations

import re
from datetime import datetime, tzinfo

from adapters.base import JobStatus, NativeState
from adapters.batch.text import duration, integer, query_failed, text, timestamp
from adapters.reasons import Reason, because, scheduler_says
from adapters.sge.arrays import record_id
from adapters.sge.commands import SgeCommands
from adapters.sge.states import FAILED_CODES, KILLED_CODES
from adapters.transport import CommandResult

_SEPARATOR = re.compile(r"=+\s*")
_NOT_FOUND = re.compile(r"job (id|name) \S+ not found")
# A fresh cluster: no job has ended, so qmaster has not written its accounting file yet
# (qacct says so, and that it cannot open the file): no records, not a failure.
_NOTHING_ENDED_YET = re.compile(r"^no jobs running since startup$", re.MULTILINE)
_H_RT = re.compile(r"(?:^|[\s,])h_rt=([^\s,]+)")


def accounting_command(commands: SgeCommands, native_id: str) -> tuple[str, ...]:
    """`-m`: master tasks only. A PE whose accounting_summary is false also writes one record
    per slave task, and a slave's record (often the last to end) would hide the job's own
    exit status (seen with Debian's 8.1.9 qacct)."""
    return (commands.qacct, "-m", "-j", native_id)


def find_command(commands: SgeCommands, tag: str) -> tuple[str, ...]:
    """qacct -j also takes a job name."""
    return (commands.qacct, "-m", "-j", tag)


def blocks(result: CommandResult) -> list[str]:
    """Each record qacct printed, verbatim; [] when it knows no such job."""
    if result.exit_status != 0:
        if _NOT_FOUND.search(text(result.stderr) + text(result.stdout)) \
                or _NOTHING_ENDED_YET.search(text(result.stdout)):
            return []
        raise query_failed(result)
    found: list[str] = []
    current: list[str] = []
    for line in text(result.stdout).splitlines():
        if _SEPARATOR.fullmatch(line):
            if current:
                found.append("\n".join(current))
            current = []
        elif line.strip():
            current.append(line)
    if current:
        found.append("\n".join(current))
    return found


def block_fields(block: str) -> dict[str, str]:
    """One record's `key value` lines as a dict."""
    fields: dict[str, str] = {}
    for line in block.splitlines():
        key, _, value = line.strip().partition(" ")
        if key:
            fields[key] = value.strip()
    return fields


def parse_records(result: CommandResult) -> list[dict[str, str]]:
    """The `key value` blocks qacct printed; [] when it knows no such job."""
    return [block_fields(block) for block in blocks(result)]


def record_status(record: dict[str, str], tz: tzinfo) -> JobStatus:
    """How the job of one accounting record ended."""
    native_id = record_id(record)
    failed_field = record.get("failed", "0")
    failed = integer(failed_field.partition(":")[0]) or 0
    exit_status = integer(record.get("exit_status", "").split(" ")[0])
    started = timestamp(record.get("start_time"), tz)
    ended = timestamp(record.get("end_time"), tz)
    raw = f"failed {failed_field}, exit_status {exit_status}"
    if failed == 0 and exit_status == 0:
        return JobStatus(native_id, NativeState.COMPLETED, raw, None, 0, started, ended)
    if failed == 0:
        return JobStatus(native_id, NativeState.FAILED, raw, Reason.NON_ZERO_EXIT, exit_status,
                         started, ended)
    if failed in KILLED_CODES and _ran_out_of_time(record, started, ended):
        return JobStatus(native_id, NativeState.FAILED, raw, Reason.TIMEOUT, exit_status,
                         started, ended)
    if failed in KILLED_CODES and exit_status is not None and exit_status > 128:
        reason = because(Reason.KILLED_BY_SIGNAL, exit_status - 128, " ")
    else:
        described = failed_field.partition(":")[2].strip() or FAILED_CODES.get(failed, "")
        # qacct's own `failed` field, as it prints it ("37 : qmaster enforced ...").
        reason = scheduler_says(f"failed {failed}: {described}".rstrip(": "))
    return JobStatus(native_id, NativeState.FAILED, raw, reason, exit_status, started, ended)


def _ran_out_of_time(
    record: dict[str, str], started: datetime | None, ended: datetime | None
) -> bool:
    """The job was killed once it had run for its whole h_rt (from its category)."""
    match = _H_RT.search(record.get("category", ""))
    limit = duration(match.group(1)) if match else None
    if limit is None or started is None or ended is None:
        return False
    # qacct's times have whole seconds; a job killed at its limit ends at >= limit - 1.
    return (ended - started).total_seconds() >= limit - 1


def parse_accounting(result: CommandResult, tz: tzinfo) -> dict[str, JobStatus]:
    """One status per job number; the latest record wins (a rescheduled job has several)."""
    statuses = [record_status(record, tz) for record in parse_records(result)]
    statuses.sort(key=lambda s: s.ended_at.timestamp() if s.ended_at else 0.0)
    return {s.native_id: s for s in statuses if s.native_id}
