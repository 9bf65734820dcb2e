"""Past waits from a site's own records, to start its wait history before the gateway
has observed any (pure: text or a log in, waits out).

Three sources, each read in full and in its own terms:
- a Standard Workload Format log (`swf.py`): start = UnixStartTime + submit + wait;
- a Slurm accounting dump, `sacct --parsable2 --noheader --allocations --allusers
  --format=JobIDRaw,User,Partition,NCPUS,TimelimitRaw,Submit,Start,State` (with
  `SLURM_TIME_FORMAT=%s` for epoch times; otherwise local times, read in `tz`);
- a Grid Engine accounting dump, `qacct -j` (every record; local times, read in `tz`).
Jobs that never started (pending, cancelled in the queue), or whose submit or start time
is missing, give no wait and are counted as skipped.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, tzinfo
from pathlib import Path

from adapters.batch.text import duration, integer, timestamp
from adapters.sge.accounting import parse_records
from adapters.transport import CommandResult
from gateway.scheduling.swf import SwfError, iter_jobs, read_header

SACCT_FORMAT = "JobIDRaw,User,Partition,NCPUS,TimelimitRaw,Submit,Start,State"
_SACCT_FIELDS = SACCT_FORMAT.count(",") + 1
FORMATS = ("swf", "sacct", "qacct")


class HistoryFormatError(ValueError):
    """A dump that is not what its format says: the message names the line."""


@dataclass(frozen=True, slots=True)
class PastWait:
    """One job that waited: its queue, size and limit (seconds; None: unknown), who ran
    it, how long it waited and when it started (epoch seconds)."""

    queue: str
    procs: int
    time_limit: float | None
    user: str | None
    wait: float
    started: float


@dataclass
class Imported:
    """What a read gave: the waits, and how many records gave none."""

    waits: list[PastWait]
    skipped: int = 0


def from_swf(path: Path) -> Imported:
    """The waits of an SWF log (its header's UnixStartTime dates them; 0 without one)."""
    base = read_header(path).unix_start_time or 0
    found = Imported([])
    for job in iter_jobs(path):
        if job.wait < 0 or job.procs <= 0 or job.submit < 0:
            found.skipped += 1
            continue
        found.waits.append(PastWait(
            str(job.queue) if job.queue > 0 else "", job.procs,
            float(job.requested_time) if job.requested_time > 0 else None,
            f"swf:{job.user}" if job.user > 0 else None, float(job.wait),
            float(base + job.submit + job.wait)))
    return found


def from_sacct(lines: Iterable[str], tz: tzinfo = UTC) -> Imported:
    """The waits in a `sacct --parsable2` dump of SACCT_FORMAT (see module)."""
    found = Imported([])
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        fields = line.rstrip("\n").split("|")
        if len(fields) != _SACCT_FIELDS:
            raise HistoryFormatError(
                f"line {number}: {len(fields)} fields, expected {_SACCT_FIELDS} "
                f"(sacct --parsable2 --format={SACCT_FORMAT})")
        _, user, partition, ncpus, limit, submit, start, state = fields
        submitted, started = timestamp(submit, tz), timestamp(start, tz)
        procs = integer(ncpus) or 0
        if submitted is None or started is None or procs <= 0 or state == "PENDING":
            found.skipped += 1
            continue
        minutes = integer(limit)  # TimelimitRaw: minutes, or UNLIMITED / Partition_Limit
        found.waits.append(PastWait(
            partition, procs, float(minutes * 60) if minutes else None, user or None,
            max((started - submitted).total_seconds(), 0.0), started.timestamp()))
    return found


def from_qacct(text: str, tz: tzinfo = UTC) -> Imported:
    """The waits in a `qacct -j` dump (every record of the accounting file)."""
    found = Imported([])
    result = CommandResult(("qacct", "-j"), 0, text.encode(), b"")
    for record in parse_records(result):
        submitted = timestamp(record.get("qsub_time"), tz)
        started = timestamp(record.get("start_time"), tz)
        procs = integer(record.get("slots", "")) or 0
        if submitted is None or started is None or procs <= 0:
            found.skipped += 1
            continue
        limit = _h_rt(record.get("category", ""))
        found.waits.append(PastWait(
            record.get("qname", ""), procs, float(limit) if limit else None,
            record.get("owner") or None,
            max((started - submitted).total_seconds(), 0.0), started.timestamp()))
    return found


def _h_rt(category: str) -> int | None:
    for part in category.replace(",", " ").split():
        if part.startswith("h_rt="):
            return duration(part.removeprefix("h_rt="))
    return None


def read(path: Path, kind: str, tz: tzinfo = UTC) -> Imported:
    """Read `path` as `kind` (one of FORMATS); HistoryFormatError saying what is wrong."""
    if kind == "swf":
        try:
            return from_swf(path)
        except SwfError as exc:
            raise HistoryFormatError(str(exc)) from exc
    text = path.read_text(errors="replace")
    if kind == "sacct":
        return from_sacct(text.splitlines(), tz)
    if kind == "qacct":
        return from_qacct(text, tz)
    raise HistoryFormatError(f"unknown format {kind!r}; one of: {', '.join(FORMATS)}")


def in_order(waits: Iterable[PastWait]) -> Iterator[PastWait]:
    """The waits by start time, as a history must take them."""
    return iter(sorted(waits, key=lambda w: w.started))
