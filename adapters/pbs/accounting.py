"""The PBS server's accounting log: E (job end) and D (job deleted) records. Pure.

Format (OpenPBS src/server/accounting.c, write_account_record and account_jobend):
`MM/DD/YYYY HH:MM:SS;<type>;<job id>;<message>`, the message being space separated
`key=value` pairs (values with spaces in double, or single, quotes): user, group,
[account, project,] jobname, queue, ctime, qtime, etime, start, exec_host, exec_vnode,
Resource_List.*, session, end, Exit_status, resources_used.*, run_count. Times in the
pairs are epoch seconds. A D record's message is `requestor=<user>@<host>`.

The logs live in PBS_HOME/server_priv/accounting/<YYYYMMDD> on the server host; a site
whose logs the gateway account can read names that directory in its config.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from adapters.base import JobStatus, NativeState
from adapters.batch.text import integer, query_failed, text
from adapters.pbs.commands import PbsCommands
from adapters.pbs.states import ended
from adapters.pbs.submit import JOB_ID
from adapters.reasons import Reason, because
from adapters.transport import CommandResult

_RECORD = re.compile(r"(?P<at>\d\d/\d\d/\d{4} \d\d:\d\d:\d\d);(?P<type>[A-Za-z]);"
                     r"(?P<id>[^;]+);(?P<message>.*)")
# grep: exit 1 means "no line matched".
_NO_MATCH = 1


@dataclass(frozen=True)
class AccountingRecord:
    logged_at: str
    type: str
    native_id: str
    fields: dict[str, str]
    # The log line as written, kept for audit (usage records).
    line: str = ""


def accounting_command(
    commands: PbsCommands, native_ids: Sequence[str], accounting_dir: str, types: str = "ED"
) -> tuple[str, ...]:
    """The records of these `types` (E and D by default) of these jobs from every log file
    (fixed strings, no regex)."""
    patterns: list[str] = []
    for native_id in native_ids:
        if JOB_ID.matches(native_id):
            for record_type in types:
                patterns += ["-e", f";{record_type};{native_id};"]
    return (commands.grep, "-h", "-r", "-F", *patterns, "--", accounting_dir)


def _pairs(message: str) -> dict[str, str]:
    try:
        words = shlex.split(message)
    except ValueError:
        words = message.split()
    pairs = {}
    for word in words:
        key, sep, value = word.partition("=")
        if sep:
            pairs[key] = value
    return pairs


def parse_records(data: str) -> list[AccountingRecord]:
    """Every well-formed record of accounting log text (other lines are skipped)."""
    records = []
    for line in data.splitlines():
        match = _RECORD.fullmatch(line.strip())
        if match:
            records.append(AccountingRecord(
                match["at"], match["type"], match["id"], _pairs(match["message"]), line.strip()
            ))
    return records


def epoch(value: str | None) -> datetime | None:
    """A time of the record's message (epoch seconds); None for none or 0."""
    seconds = integer(value)
    return datetime.fromtimestamp(seconds, UTC) if seconds else None


def record_status(record: AccountingRecord) -> JobStatus:
    if record.type == "D":
        who = record.fields.get("requestor", "")
        return JobStatus(record.native_id, NativeState.CANCELLED, "D",
                         because(Reason.DELETED, f"by {who}", " ") if who else Reason.DELETED)
    exit_status = integer(record.fields.get("Exit_status"))
    state, reason, code = ended(exit_status, None)
    return JobStatus(record.native_id, state, f"E (Exit_status {exit_status})", reason, code,
                     epoch(record.fields.get("start")), epoch(record.fields.get("end")))


def found_records(result: CommandResult) -> list[AccountingRecord]:
    """The records grep found; [] when it matched none."""
    if result.exit_status == _NO_MATCH and not result.stdout:
        return []
    if result.exit_status != 0:
        raise query_failed(result)
    return parse_records(text(result.stdout))


def parse_accounting(result: CommandResult) -> dict[str, JobStatus]:
    """An E record settles a job; a D record alone means it was deleted before it ran."""
    found: dict[str, JobStatus] = {}
    records = [r for r in found_records(result) if r.type in ("E", "D")]
    # D records first, so a job's E record (it ran, then was deleted) has the last word.
    for record in sorted(records, key=lambda r: r.type == "E"):
        found[record.native_id] = record_status(record)
    return found
