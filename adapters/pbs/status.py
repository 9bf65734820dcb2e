"""qstat -f -F json -x: jobs queued, running and (with job history) finished. Pure.

Format: the JSON qstat prints with `-F json` (OpenPBS doc/man1/qstat.1B; design page
PP-483 "Enhance output of qstat", pbspro.atlassian.net): `{"timestamp", "pbs_version",
"pbs_server", "Jobs": {"<id>": {attribute: value}}}` with the attributes of
pbs_job_attributes(7B): job_state, Exit_status, comment, stime (start), obittime and mtime,
times as qstat prints them ("Fri Nov 11 17:57:05 2016", server local time). Ids qstat
does not know are reported on stderr ("qstat: Unknown Job Id ...").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import tzinfo
from typing import Any

from adapters.base import JobStatus, NativeState
from adapters.batch.text import lines, query_failed, text, timestamp
from adapters.errors import SiteUnavailable
from adapters.pbs.commands import PbsCommands
from adapters.pbs.states import FINISHED, ended, native_state
from adapters.pbs.submit import JOB_ID
from adapters.reasons import scheduler_says
from adapters.transport import CommandResult

_UNKNOWN = "Unknown Job Id"


def status_command(commands: PbsCommands, native_ids: Sequence[str]) -> tuple[str, ...]:
    ids = [i for i in native_ids if JOB_ID.matches(i)]
    return (commands.qstat, "-f", "-F", "json", "-x", *ids)


def sequence_number(native_id: str) -> str:
    """`123` of `123.server.domain`: qstat may print a longer server name than qsub did."""
    return native_id.split(".", 1)[0]


def load_json(result: CommandResult, key: str) -> Mapping[str, Any]:
    """The `key` object of qstat's JSON; {} when every error was an unknown job id."""
    body = text(result.stdout).strip()
    if not body:
        errors = lines(result.stderr)
        if result.exit_status == 0 or (errors and all(_UNKNOWN in e for e in errors)):
            return {}
        raise query_failed(result)
    try:
        # strict=False: attribute values may hold raw control characters.
        data = json.loads(body, strict=False)
    except ValueError as exc:
        raise SiteUnavailable(f"qstat printed unreadable JSON ({exc}): {body[:200]!r}") from exc
    section = data.get(key, {}) if isinstance(data, dict) else {}
    return section if isinstance(section, dict) else {}


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def job_status(native_id: str, attrs: Mapping[str, Any], tz: tzinfo) -> JobStatus:
    letter = str(attrs.get("job_state", ""))
    comment = attrs.get("comment")
    comment = str(comment) if comment is not None else None
    started = timestamp(str(attrs.get("stime", "")), tz)
    if letter in FINISHED:
        exit_status = _int(attrs.get("Exit_status"))
        state, reason, code = ended(exit_status, comment)
        end = attrs.get("obittime") or attrs.get("mtime")
        return JobStatus(native_id, state, f"{letter} (Exit_status {exit_status})", reason, code,
                         started, timestamp(str(end or ""), tz))
    state, reason = native_state(letter)
    if state is NativeState.QUEUED:
        reason = scheduler_says(comment) if comment else reason
        started = None
    return JobStatus(native_id, state, letter, reason, started_at=started)


def parse_status(
    result: CommandResult, native_ids: Sequence[str], tz: tzinfo
) -> dict[str, JobStatus]:
    by_number = {sequence_number(i): i for i in native_ids}
    found: dict[str, JobStatus] = {}
    for key, attrs in load_json(result, "Jobs").items():
        native_id = key if key in native_ids else by_number.get(sequence_number(key))
        if native_id is not None and isinstance(attrs, dict):
            found[native_id] = job_status(native_id, attrs, tz)
    return found
