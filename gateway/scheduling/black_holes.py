"""Black holes: a site whose jobs keep failing soon after they start (pure).

A broken node, a missing module or a full scratch file system makes a site swallow jobs:
they start at once and die within seconds, and since its queue then looks short, a
router that only sees waits would send it ever more work. As GridWay does, such a site
is banned from routing for a while: after `STREAK` quick failures in a row (a job that
ran at most `quick_seconds`), for `base_seconds`, doubling with each ban that follows
without a success in between, up to `max_seconds`. Any attempt there that succeeds, or
that fails only after running a while (the job's own bug, not the site's), ends the streak
and resets the escalation. The ban is derived from the site's recent attempt history
each time, so there is no state to lose in a crash.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

STREAK = 3


@dataclass(frozen=True, slots=True)
class AttemptEnd:
    """An attempt that ran at a site and ended: when (epoch seconds), after how long
    running, and whether it failed."""

    ended_at: float
    ran_seconds: float
    failed: bool


@dataclass(frozen=True, slots=True)
class BanRule:
    """How quick a failure must be to count, and how long bans last (seconds)."""

    quick_seconds: float = 120.0
    base_seconds: float = 600.0
    max_seconds: float = 6 * 3600.0


@dataclass(frozen=True, slots=True)
class Ban:
    """A ban in force: until when, and a sentence saying why."""

    until: float
    reason: str


def ban_in_force(ends: Iterable[AttemptEnd], now: float,
                 rule: BanRule = BanRule()) -> Ban | None:
    """The ban `ends` (one site's ended attempts, any order) put on the site at `now`."""
    streak = bans = 0
    until = 0.0
    for end in sorted(ends, key=lambda e: e.ended_at):
        if not (end.failed and end.ran_seconds <= rule.quick_seconds):
            streak = bans = 0
            continue
        streak += 1
        if streak == STREAK:
            length = min(rule.base_seconds * 2 ** bans, rule.max_seconds)
            until = end.ended_at + length
            bans += 1
            streak = 0
    if until <= now:
        return None
    return Ban(until, (f"{STREAK} jobs in a row failed within {rule.quick_seconds:.0f} s of "
                       f"starting; out of routing for {until - now:.0f} s more"))
