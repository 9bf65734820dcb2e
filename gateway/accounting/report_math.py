"""The arithmetic of committee reports, pure: burn rate and projected exhaustion, job size
buckets, nearest-rank percentiles and the expansion factor. No I/O: the sums come from
the database (gateway.repositories.money.reports), the rules from here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

SECONDS_PER_DAY = 86_400
# Job sizes by cores, as an XDMoD "job size" dimension: (label, least cores, most cores).
SIZE_BUCKETS: tuple[tuple[str, int, int | None], ...] = (
    ("1", 1, 1),
    ("2-4", 2, 4),
    ("5-16", 5, 16),
    ("17-64", 17, 64),
    ("65-256", 65, 256),
    ("257+", 257, None),
)


def size_label(cores: int) -> str:
    """The bucket a run of `cores` cores falls in ('0' for a record of no cores)."""
    for label, low, high in SIZE_BUCKETS:
        if cores >= low and (high is None or cores <= high):
            return label
    return "0"


def burn_per_day_milli(used_in_window_milli: int, window: timedelta) -> int:
    """milli-SU used per day over `window` (rounded down; 0 for an empty window)."""
    seconds = int(window.total_seconds())
    if seconds <= 0 or used_in_window_milli <= 0:
        return 0
    return used_in_window_milli * SECONDS_PER_DAY // seconds


@dataclass(frozen=True)
class Exhaustion:
    """When an allocation runs out at its burn rate, and whether that is before it ends."""

    at: datetime | None
    before_end: bool


def exhaustion(remaining_milli: int, burn_per_day: int, as_of: datetime,
               ends_at: datetime) -> Exhaustion:
    """The projected exhaustion date: `as_of` + remaining / burn rate. Already exhausted
    (nothing remaining) is `as_of`; no burn means never (None)."""
    if remaining_milli <= 0:
        return Exhaustion(as_of, as_of < ends_at)
    if burn_per_day <= 0:
        return Exhaustion(None, False)
    seconds = remaining_milli * SECONDS_PER_DAY // burn_per_day
    if seconds > (datetime.max.replace(tzinfo=as_of.tzinfo) - as_of).total_seconds():
        return Exhaustion(None, False)
    at = as_of + timedelta(seconds=seconds)
    return Exhaustion(at, at < ends_at)


def rank_offset(count: int, quantile: float) -> int | None:
    """The 0-based position of the nearest-rank `quantile` in `count` sorted values
    (p50 of 4 values is the 2nd: offset 1); None when there are no values."""
    if not 0 < quantile <= 1:
        raise ValueError("a quantile is in (0, 1]")
    if count <= 0:
        return None
    # ceil(q * n) without floats going a hair over an integer (0.9 * 10 = 9.000000000000002).
    rank = -(-round(quantile * count * 1_000_000) // 1_000_000)
    return max(rank, 1) - 1


def expansion_factor(wait_seconds: float, run_seconds: float) -> float | None:
    """(wait + run) / run: 1.0 for a job that never waited; None when it did not run."""
    if run_seconds <= 0:
        return None
    return (max(wait_seconds, 0.0) + run_seconds) / run_seconds


def core_hours(core_seconds: int) -> float:
    """Core-seconds as core-hours (three decimals)."""
    return round(core_seconds / 3600, 3)
