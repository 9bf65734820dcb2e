"""bjobs -u all -json -o "..." and bhosts -w: the whole queue and the slots. Pure.

Jobs: IBM Spectrum LSF 10.1 `bjobs -u all -json -o "<fields>"` (LSF command reference:
bjobs -o, -json, -u all; the JSON of adapters.lsf.status): every unfinished job of every
user, with the fields jobid, jobindex (an array element's index, 0 otherwise), stat,
queue, user, nreq_slot and nalloc_slot (slots asked for and given), runtimelimit (the run
limit in minutes, e.g. "60.0", possibly followed by "/<host>" when normalised to a host),
submit_time, start_time, estimated_sim_start_time (the start LSF's simulation-based
estimator predicts, when LSB_ENABLE_ESTIMATION=Y in lsf.conf: lsf.conf(5)) and job_name.
Times look like "Nov 22 02:15" without a year, in the cluster's local time. No job at all:
"No unfinished job found" on stderr.

Slots: `bhosts -w` (bhosts(1): HOST_NAME STATUS JL/U MAX NJOBS RUN SSUSP USUSP RSV, one host
per line): MAX slots per host ("-": unlimited, so the site's total is unknown), NJOBS of
them taken by jobs; only a host whose status is `ok` has free slots.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta, tzinfo
from typing import Any

from adapters.batch.text import integer, lines, query_failed, text
from adapters.batch.types import job_phase
from adapters.errors import SiteUnavailable
from adapters.lsf.commands import LsfCommands
from adapters.lsf.states import native_state
from adapters.lsf.status import JOB_ID, lsf_time, records
from adapters.snapshot import JobPhase, SiteCores, SnapshotJob
from adapters.transport import CommandResult

FIELDS = ("jobid jobindex stat queue user nreq_slot nalloc_slot runtimelimit submit_time "
          "start_time estimated_sim_start_time job_name")
_MINUTES = re.compile(r"([0-9]+(?:\.[0-9]+)?)(?:/\S+)?")
_NO_JOBS = ("No unfinished job found", "No job found")
_HOST_COLUMNS = ("HOST_NAME", "STATUS", "JL/U", "MAX", "NJOBS")


def queue_jobs_command(commands: LsfCommands) -> tuple[str, ...]:
    return (commands.bjobs, "-u", "all", "-json", "-o", FIELDS)


def _minutes(value: str) -> int | None:
    match = _MINUTES.fullmatch(value.strip())
    return round(float(match[1]) * 60) if match else None


def _future_time(value: str | None, tz: tzinfo, now: datetime) -> datetime | None:
    """A predicted time without a year: the date nearest to `now`, mostly ahead of it."""
    found = lsf_time(value, tz, now)
    if found is not None and found < now - timedelta(days=1):
        try:
            return found.replace(year=found.year + 1)
        except ValueError:  # Feb 29 of a leap year
            return found + timedelta(days=365)
    return found


def _job(record: Mapping[str, Any], tz: tzinfo, now: datetime) -> SnapshotJob | None:
    number, index = str(record.get("JOBID", "")), str(record.get("JOBINDEX", "")).strip()
    native_id = f"{number}[{index}]" if index not in ("", "0") else number
    if not JOB_ID.matches(native_id):
        raise SiteUnavailable(f"bjobs listed a job id LSF does not issue: {native_id!r}")
    raw = str(record.get("STAT", ""))
    phase = job_phase(native_state(raw)[0]) if raw else None
    if phase is None:
        return None
    given = integer(str(record.get("NALLOC_SLOT", "")))
    asked = integer(str(record.get("NREQ_SLOT", "")))
    running = phase is JobPhase.RUNNING
    return SnapshotJob(
        native_id=native_id,
        phase=phase,
        raw_state=raw,
        cores=given if running and given else asked,
        time_limit_seconds=_minutes(str(record.get("RUNTIMELIMIT", ""))),
        submitted_at=lsf_time(record.get("SUBMIT_TIME"), tz, now),
        started_at=lsf_time(record.get("START_TIME"), tz, now) if running else None,
        estimated_start=None if running else _future_time(
            record.get("ESTIMATED_SIM_START_TIME"), tz, now),
        queue=str(record.get("QUEUE", "")) or None,
        user=str(record.get("USER", "")) or None,
        name=str(record.get("JOB_NAME", "")) or None,
    )


def parse_queue_jobs(result: CommandResult, tz: tzinfo, now: datetime) -> list[SnapshotJob]:
    """Pending and running (or suspended) jobs; `now` gives bjobs' times their year."""
    if not text(result.stdout).strip() and any(n in text(result.stderr) for n in _NO_JOBS):
        return []
    jobs = [_job(record, tz, now) for record in records(result)]
    return [job for job in jobs if job is not None]


def cores_command(commands: LsfCommands) -> tuple[str, ...]:
    return (commands.bhosts, "-w")


def parse_cores(result: CommandResult) -> SiteCores:
    """Every host's MAX slots, and the untaken ones of hosts that are `ok`."""
    if result.exit_status != 0:
        raise query_failed(result)
    rows = [line.split() for line in lines(result.stdout)]
    if not rows or tuple(rows[0][:5]) != _HOST_COLUMNS:
        raise SiteUnavailable(f"bhosts -w printed no host table: {text(result.stdout)[:200]!r}")
    total: int | None = 0
    free = 0
    for row in rows[1:]:
        if len(row) < 5:
            raise SiteUnavailable(f"bhosts -w printed a short line: {' '.join(row)!r}")
        _, status, _, most, taken = row[:5]
        slots, used = integer(most), integer(taken) or 0
        total = None if total is None or slots is None else total + slots
        if status == "ok" and slots is not None:
            free += max(slots - used, 0)
    return SiteCores(total, free) if len(rows) > 1 else SiteCores(None, None)
