"""bjobs -a -json -o "...": jobs pending, running and recently finished. Pure.

Format: IBM Spectrum LSF 10.1 `bjobs -o <fields> -json` ("bjobs -json" and "bjobs -o" in
the LSF command reference): `{"COMMAND": "bjobs", "JOBS": n, "RECORDS": [{"JOBID": ...,
"STAT": ..., ...}]}`, field names in upper case, every value a string ("" when empty),
`/` escaped as `\\/`; an id LSF does not know gives a record `{"JOBID": ..., "ERROR":
"Job <N> is not found"}`. Recorded examples: TheRoddyWMS/BatchEuphoria,
src/test/groovy/de/dkfz/roddy/execution/jobs/cluster/lsf/LSFJobManagerSpec.groovy.
Times look like "Dec 28 19:56" (no year; a trailing " L" or " E" flag is dropped),
in the cluster's local time. `-a` keeps finished jobs listed for LSF's CLEAN_PERIOD.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from adapters.base import JobStatus, NativeState
from adapters.batch.text import integer, lines, no_value, query_failed, text
from adapters.errors import SiteUnavailable
from adapters.lsf.arrays import record_id
from adapters.lsf.commands import LsfCommands
from adapters.lsf.states import exit_outcome, native_state
from adapters.reasons import scheduler_says
from adapters.transport import CommandResult
from rules.text import TextRule

FIELDS = "jobid stat exit_code exit_reason pend_reason start_time finish_time job_name"
JOB_ID = TextRule("LSF job id", r"[0-9]+(?:\[[0-9]+\])?", "digits, e.g. 123 or 123[4]")
_FLAG = re.compile(r"\s+[A-Z]\Z")
_LAYOUTS_WITH_YEAR = ("%b %d %Y %H:%M", "%b %d %H:%M %Y", "%Y/%m/%d %H:%M:%S", "%Y/%m/%d %H:%M")
_LAYOUTS = ("%b %d %H:%M", "%b %d %H:%M:%S")


def status_command(commands: LsfCommands, native_ids: Sequence[str]) -> tuple[str, ...]:
    ids = [i for i in native_ids if JOB_ID.matches(i)]
    return (commands.bjobs, "-a", "-json", "-o", FIELDS, *ids)


def find_command(commands: LsfCommands, tag: str) -> tuple[str, ...]:
    return (commands.bjobs, "-a", "-json", "-o", FIELDS, "-J", tag)


def lsf_time(value: str | None, tz: tzinfo, now: datetime) -> datetime | None:
    """A bjobs time; without a year it is the latest such date not in the future."""
    if no_value(value):
        return None
    assert value is not None
    raw = " ".join(_FLAG.sub("", value.strip()).split())
    for layout in _LAYOUTS_WITH_YEAR:
        try:
            return datetime.strptime(raw, layout).replace(tzinfo=tz).astimezone(UTC)
        except ValueError:
            continue
    local_now = now.astimezone(tz)
    for layout in _LAYOUTS:
        try:
            # The year is given so Feb 29 parses; it is replaced below.
            parsed = datetime.strptime(f"{local_now.year} {raw}", f"%Y {layout}")
        except ValueError:
            continue
        candidate = parsed.replace(tzinfo=tz)
        if candidate > local_now + timedelta(days=1):
            candidate = candidate.replace(year=candidate.year - 1)
        return candidate.astimezone(UTC)
    return None


def records(result: CommandResult) -> list[Mapping[str, Any]]:
    """The RECORDS of bjobs' JSON, without the "not found" ones."""
    body = text(result.stdout).strip()
    if not body:
        said = " ".join(lines(result.stderr))
        if result.exit_status == 0 or "is not found" in said or "No job found" in said:
            return []
        raise query_failed(result)
    try:
        data = json.loads(body)
    except ValueError as exc:
        raise SiteUnavailable(f"bjobs printed unreadable JSON ({exc}): {body[:200]!r}") from exc
    found = data.get("RECORDS", []) if isinstance(data, dict) else []
    return [r for r in found if isinstance(r, dict) and "ERROR" not in r]


def record_status(record: Mapping[str, Any], tz: tzinfo, now: datetime) -> JobStatus:
    native_id = record_id(record)
    stat = str(record.get("STAT", ""))
    state, reason = native_state(stat)
    started = lsf_time(record.get("START_TIME"), tz, now)
    if state is NativeState.QUEUED:
        pending = str(record.get("PEND_REASON", "")).strip().rstrip(";")
        return JobStatus(native_id, state, stat, scheduler_says(pending) if pending else reason)
    if not state.is_final:
        return JobStatus(native_id, state, stat, reason, started_at=started)
    ended = lsf_time(record.get("FINISH_TIME"), tz, now)
    code = integer(str(record.get("EXIT_CODE", "")))
    if state is NativeState.COMPLETED:
        return JobStatus(native_id, state, stat, None, 0, started, ended)
    exit_reason = str(record.get("EXIT_REASON", "")).strip()
    outcome = exit_outcome(exit_reason)
    if outcome is not None:
        return JobStatus(native_id, outcome[0], stat, outcome[1], code, started, ended)
    return JobStatus(native_id, state, stat, reason, code, started, ended)


def parse_status(
    result: CommandResult, native_ids: Sequence[str], tz: tzinfo, now: datetime
) -> dict[str, JobStatus]:
    wanted = set(native_ids)
    found: dict[str, JobStatus] = {}
    for record in records(result):
        status = record_status(record, tz, now)
        if status.native_id in wanted:
            found[status.native_id] = status
    return found
