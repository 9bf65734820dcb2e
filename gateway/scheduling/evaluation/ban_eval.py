"""How many black-hole bans a workload log would have raised, under today's rule and the
rule before it (pure; benchmarks/black_hole_bans.py runs it on the shared logs).

A log (SWF) says whether each job completed (status 1) or failed (0), not why, while
today's rule (`gateway.scheduling.black_holes`) counts only failures with signs of the
site. So it is run on two readings of the log, with every *quick* failure (one that ran
at most `QUICK_SECONDS`, what the former rule counted) taken to carry a weak sign of the
site (staging, a container runtime: rows of two users) or a strong one (a node failure:
rows of two users or of one user's two programs), and slower failures the jobs' own. The
strong reading is an upper bound on the bans today's rule raises; the former rule's count
is exact. Read as they most likely are, quick non-zero exits with no sign of the site,
today's rule raises no ban at all. Each ban is also scored by its harm: the jobs of
*other* users submitted while it was in force (routing kept the site from them), and
whether one user's jobs alone raised it (the issue-25 failure: a researcher's own bugs
taking a site from everyone).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from adapters.reasons import Reason
from gateway.scheduling.black_holes import STREAK, AttemptEnd, BanRule, raised_bans
from gateway.scheduling.swf import SwfJob

# What the rule before issue 25 counted: a failure within this many seconds of starting.
QUICK_SECONDS = 120.0
COMPLETED, FAILED = 1, 0


@dataclass(frozen=True, slots=True)
class Ended:
    """One job of the log that ran and ended, as the ban rules see it."""

    submit: float
    end: float
    run: float
    user: int
    program: str
    failed: bool


@dataclass(frozen=True, slots=True)
class Interval:
    """A ban: from, until (log seconds), and the users of the row that raised it."""

    start: float
    until: float
    users: frozenset[int]


def ended_jobs(jobs: Iterable[SwfJob]) -> list[Ended]:
    """The log's completed and failed jobs with a known start, in order of their end."""
    ended = [Ended(float(j.submit), float(j.start + j.run), float(j.run), j.user,
                   f"user {j.user} executable {j.executable}", j.status == FAILED)
             for j in jobs
             if j.status in (COMPLETED, FAILED) and j.start >= 0 and j.run >= 0]
    return sorted(ended, key=lambda e: e.end)


def former_rule(ended: Sequence[Ended], rule: BanRule = BanRule()) -> list[Interval]:
    """The bans of the rule before issue 25: `STREAK` quick failures in a row, whoever
    ran them; a success or a slow failure ends the row and the escalation."""
    bans: list[Interval] = []
    row: list[Ended] = []
    escalation = 0
    for job in ended:
        if not (job.failed and job.run <= QUICK_SECONDS):
            row, escalation = [], 0
            continue
        row.append(job)
        if len(row) == STREAK:
            length = min(rule.base_seconds * 2 ** escalation, rule.max_seconds)
            bans.append(Interval(job.end, job.end + length, frozenset(j.user for j in row)))
            row, escalation = [], escalation + 1
    return bans


def todays_rule(ended: Sequence[Ended], quick_reason: str,
                rule: BanRule = BanRule()) -> list[Interval]:
    """The bans of `black_holes.raised_bans`, every quick failure ended by `quick_reason`."""
    ends = [AttemptEnd(j.end, str(j.user), j.program, not j.failed,
                       quick_reason if j.failed and j.run <= QUICK_SECONDS
                       else str(Reason.NON_ZERO_EXIT) if j.failed else "")
            for j in ended]
    return [Interval(r.at, r.until, frozenset(int(owner) for owner in r.owners))
            for r in raised_bans(ends, rule)]


def _union_seconds(bans: Sequence[Interval]) -> float:
    total, reach = 0.0, float("-inf")
    for ban in sorted(bans, key=lambda b: b.start):
        start = max(ban.start, reach)
        if ban.until > start:
            total += ban.until - start
        reach = max(reach, ban.until)
    return total


def score(bans: Sequence[Interval], ended: Sequence[Ended]) -> dict[str, float]:
    """A rule's bans on one log: how many, how long in all, how many one user raised
    alone, and the jobs of other users (not in the row that raised the ban) submitted
    while one was in force: jobs routing kept from the site."""
    by_submit = sorted(ended, key=lambda e: e.submit)
    submits = [e.submit for e in by_submit]
    kept_from = 0
    for ban in bans:
        lo, hi = bisect_left(submits, ban.start), bisect_right(submits, ban.until)
        kept_from += sum(1 for e in by_submit[lo:hi] if e.user not in ban.users)
    return {"bans": len(bans),
            "banned_hours": round(_union_seconds(bans) / 3600, 1),
            "raised_by_one_user_alone": sum(1 for b in bans if len(b.users) == 1),
            "other_users_jobs_submitted_during_bans": kept_from}


def evaluate_bans(jobs: Iterable[SwfJob]) -> dict[str, object]:
    """Both rules on one log (see module)."""
    ended = ended_jobs(jobs)
    quick = sum(1 for e in ended if e.failed and e.run <= QUICK_SECONDS)
    return {"ended_jobs": len(ended), "failed_jobs": sum(1 for e in ended if e.failed),
            "quick_failures": quick,
            "former_rule": score(former_rule(ended), ended),
            "todays_rule": {
                "quick_failures_as_weak_signs": score(
                    todays_rule(ended, str(Reason.STAGE_IN_FAILED)), ended),
                "quick_failures_as_strong_signs_upper_bound": score(
                    todays_rule(ended, str(Reason.NODE_FAIL)), ended),
                "quick_failures_as_own_exits": score(
                    todays_rule(ended, str(Reason.NON_ZERO_EXIT)), ended)}}
