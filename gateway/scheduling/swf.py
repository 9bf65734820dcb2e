"""Standard Workload Format (SWF v2.2) reader: streaming, gzipped or not (pure: stdlib only).

SWF is the Parallel Workloads Archive's format (Feitelson et al.,
https://www.cs.huji.ac.il/labs/parallel/workload/swf.html): one job per line, 18
whitespace-separated numbers, `-1` for unknown, header comment lines starting with `;`
(`; MaxProcs: 338`, `; UnixStartTime: 835823160`, ...). Jobs are yielded one at a time
so a 243,000-job log is never held in memory.
"""

from __future__ import annotations

import gzip
import io
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import IO
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

FIELDS = 18
# A header line is `; Name: value`; names are single words (SWF v2.2 header list).
_HEADER_LINE = re.compile(r";\s*([A-Za-z]+)\s*:\s*(.*?)\s*")
_LEADING_INT = re.compile(r"(-?\d+)(?:\D.*)?")
_GZIP_MAGIC = b"\x1f\x8b"


class SwfError(ValueError):
    """A line that is not an SWF job record (wrong field count, not numbers)."""


@dataclass(frozen=True, slots=True)
class SwfJob:
    """One job record. Times are seconds (submit from the log start); -1 means unknown."""

    number: int
    submit: int
    wait: int
    run: int
    allocated_procs: int
    avg_cpu: float
    used_memory: float
    requested_procs: int
    requested_time: int
    requested_memory: float
    status: int
    user: int
    group: int
    executable: int
    queue: int
    partition: int
    preceding_job: int
    think_time: int

    @property
    def procs(self) -> int:
        """Processors the job held: the allocation, else the request (-1 if neither is known)."""
        return self.allocated_procs if self.allocated_procs > 0 else self.requested_procs

    @property
    def submit_procs(self) -> int:
        """Processors as known at submit: the request, else the allocation (known only at
        start, but some logs record no request)."""
        return self.requested_procs if self.requested_procs > 0 else self.allocated_procs

    @property
    def account(self) -> str | None:
        """The job's owner as the account schedulers cap: its user number as text, None
        when the log does not know it (-1). Unknown owners share no account: a log
        without users would otherwise be one account holding the whole queue."""
        return str(self.user) if self.user >= 0 else None

    @property
    def start(self) -> int:
        """Start time (seconds from the log start), -1 when the wait is unknown."""
        return self.submit + self.wait if self.wait >= 0 else -1


@dataclass(frozen=True, slots=True)
class SwfHeader:
    """The header fields the simulator needs, plus every `Name: value` line as text."""

    max_procs: int | None
    unix_start_time: int | None
    fields: dict[str, list[str]]

    def clock(self) -> Callable[[float], datetime]:
        """The site's time `seconds` into the log: from its UnixStartTime (0 when it has
        none) in its TimeZoneString's zone (UTC when it names none, or none known here),
        the zone found once (a walk asks at every submit)."""
        names = self.fields.get("TimeZoneString", [])
        try:
            zone: tzinfo = ZoneInfo(names[0]) if names else UTC
        except (ZoneInfoNotFoundError, ValueError):
            zone = UTC
        start = self.unix_start_time or 0
        return lambda seconds: datetime.fromtimestamp(start + seconds, zone)


def _header_int(fields: dict[str, list[str]], name: str) -> int | None:
    # `MaxNodes: 338 (batch partition; 512 total)`: the number is the leading integer.
    for value in fields.get(name, []):
        match = _LEADING_INT.fullmatch(value)
        if match and int(match.group(1)) > 0:
            return int(match.group(1))
    return None


def parse_job(line: str) -> SwfJob:
    """Parse one SWF data line (18 numbers; fields 6, 7 and 10 may be fractional)."""
    parts = line.split()
    if len(parts) != FIELDS:
        raise SwfError(f"an SWF job line has {FIELDS} fields, this one has {len(parts)}")
    try:
        nums = [float(p) for p in parts]
    except ValueError as exc:
        raise SwfError(f"an SWF job line holds numbers only: {line.strip()[:80]!r}") from exc
    for number, (text, value) in enumerate(zip(parts, nums, strict=True), start=1):
        if not math.isfinite(value):  # float() takes "nan", "inf" and "1e999" (inf)
            raise SwfError(f"field {number} of an SWF job line must be a finite number, "
                           f"not {text!r}")
    ints = [int(n) for n in nums]
    return SwfJob(
        ints[0], ints[1], ints[2], ints[3], ints[4], nums[5], nums[6], ints[7], ints[8],
        nums[9], ints[10], ints[11], ints[12], ints[13], ints[14], ints[15], ints[16], ints[17],
    )


def _open_text(path: Path) -> IO[str]:
    with path.open("rb") as probe:
        magic = probe.read(2)
    if magic == _GZIP_MAGIC:
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="ascii", errors="replace")
    return path.open(encoding="ascii", errors="replace")


def _lines(path: Path) -> Iterator[str]:
    try:
        with _open_text(path) as stream:
            yield from stream
    except (OSError, EOFError) as exc:
        # gzip's own messages (truncated stream, bad CRC) do not say which file.
        raise SwfError(f"{path.name}: cannot read the log: {exc}") from exc


def read_header(path: Path) -> SwfHeader:
    """Read the `;` header lines at the top of a log (stops at the first job line)."""
    fields: dict[str, list[str]] = {}
    for line in _lines(path):
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith(";"):
            break
        match = _HEADER_LINE.fullmatch(stripped)
        if match:
            fields.setdefault(match.group(1), []).append(match.group(2))
    return SwfHeader(_header_int(fields, "MaxProcs"), _header_int(fields, "UnixStartTime"), fields)


def iter_jobs(path: Path) -> Iterator[SwfJob]:
    """Yield the log's job records in file order (SWF files are sorted by submit time)."""
    for number, line in enumerate(_lines(path), start=1):
        stripped = line.strip()
        if stripped and not stripped.startswith(";"):
            try:
                yield parse_job(stripped)
            except SwfError as exc:
                # Which file and line: a 200,000-line log is not searched by eye.
                raise SwfError(f"{path.name}, line {number}: {exc}") from None


def machine_size(path: Path, header: SwfHeader | None = None) -> int:
    """Processors of the logged machine: the header's MaxProcs, else the largest allocation.

    The fallback costs one extra streaming pass over the log.
    """
    header = header if header is not None else read_header(path)
    if header.max_procs is not None:
        return header.max_procs
    largest = max((job.procs for job in iter_jobs(path)), default=0)
    if largest <= 0:
        raise SwfError(f"{path.name}: no MaxProcs header and no job with a processor count")
    return largest
