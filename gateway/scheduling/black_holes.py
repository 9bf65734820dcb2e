"""Black holes: a site that fails the jobs of several owners in a row, with signs that the
site is at fault (pure).

A broken node, a missing module or a full scratch file system makes a site swallow jobs,
and since its queue then looks short, a router that only sees waits would send it ever
more work. As GridWay does, such a site is left out of routing for a while. What counts
is a failure with a sign of the site, never a program that exits non-zero in its own code
(a researcher debugging their program must not take a site away from everyone):

- strong signs, the scheduler's or the site runner's own word: a node failure, a launch
  that never got going (Slurm BOOT_FAIL, Grid Engine `failed` before the job, PBS
  JOB_EXEC_FAIL), a sandbox or output file the runner could not set up, a runner error,
  a job the scheduler lost; and a program not found or not executable (exit 126/127)
  where the same program completed recently (here or at another site);
- weak signs, which a job's own inputs or image can also cause: staging that failed, a
  container runtime that refused to start the program.

A ban needs such failures in a row (no success between them; a job's own failure neither
counts nor breaks the row) of `STREAK` different programs or owners, counting one user's
repeats of one program once, and of at least two owners, unless every one carries a
strong sign (then one user's `STREAK` programs will do). It lasts `base_seconds`, doubling with
each ban that follows without a success in between, up to `max_seconds`. An admin can lift
it (`gridgate admin site unban`): what ended before then no longer counts. The ban is
derived from the site's recent attempt history each time, so no crash can lose it.

Routing treats a ban as a passing exclusion, except that a job pinned to the site never
sees it, and a job for which the banned site is the only one open is still routed there
(`gateway.scheduling.constraints`: deprioritised, not removed).
"""

from __future__ import annotations

from collections.abc import Iterable, Set
from dataclasses import dataclass
from datetime import UTC, datetime

from adapters.reasons import Reason

STREAK = 3
# Exit codes a shell and the local runner give a program that is not there (127) or not
# executable (126).
NOT_FOUND_EXITS = frozenset({126, 127})
# Reason codes that are the site's own word that the run failed because of it.
_STRONG: tuple[str, ...] = (Reason.NODE_FAIL, Reason.BOOT_FAIL, Reason.FAILED_AT_START,
           Reason.CANNOT_PREPARE_SANDBOX, Reason.CANNOT_OPEN_OUTPUT, Reason.RUNNER_ERROR,
           Reason.LOST)
# Signs a job's own inputs or image may also cause.
CONTAINER_RUNTIME = "container runtime"
_WEAK: tuple[str, ...] = (Reason.STAGE_IN_FAILED, Reason.STAGE_OUT_FAILED, CONTAINER_RUNTIME)


@dataclass(frozen=True, slots=True)
class AttemptEnd:
    """An attempt that ended at a site: when (epoch seconds), whose job and which program
    (any stable key), whether it completed, and else its reason and exit code."""

    ended_at: float
    owner: str
    program: str
    ok: bool
    reason: str = ""
    exit_code: int | None = None


@dataclass(frozen=True, slots=True)
class Sign:
    """Why a failure is the site's: the reason code (no detail: a ban is shown to every
    user), and whether it is a strong sign (see module)."""

    code: str
    strong: bool


@dataclass(frozen=True, slots=True)
class BanRule:
    """How long bans last (seconds)."""

    base_seconds: float = 600.0
    max_seconds: float = 6 * 3600.0


@dataclass(frozen=True, slots=True)
class Ban:
    """A ban in force: until when (epoch seconds), and a sentence saying why."""

    until: float
    reason: str


def site_sign(end: AttemptEnd, completed_programs: Set[str]) -> Sign | None:
    """The sign of the site that `end` carries, or None: it completed, or failed in its
    own code. `completed_programs`: programs that completed recently at any site."""
    if end.ok:
        return None
    for part in end.reason.split("; "):
        for code in _STRONG:
            if part.startswith(code):
                return Sign(code, True)
        for code in _WEAK:
            if part.startswith(code):
                return Sign(code, False)
    if end.exit_code in NOT_FOUND_EXITS and end.program in completed_programs:
        return Sign(f"exit {end.exit_code} for a program that runs elsewhere", True)
    return None


def _enough(row: list[tuple[AttemptEnd, Sign]]) -> bool:
    if len({(end.owner, end.program) for end, _ in row}) < STREAK:
        return False  # one user retrying one program is one voice, however often
    return len({end.owner for end, _ in row}) >= 2 or all(sign.strong for _, sign in row)


@dataclass(frozen=True, slots=True)
class Raised:
    """A ban as it was raised: at the end of the row of failures that raised it (epoch
    seconds), until when, and what the row held."""

    at: float
    until: float
    jobs: int
    owners: frozenset[str]
    programs: int
    codes: tuple[str, ...]

    def why(self) -> str:
        """The row, in words anyone may read (counts and reason codes, no names)."""
        whose = (f"{len(self.owners)} users" if len(self.owners) > 1
                 else f"{self.programs} programs")
        return (f"{self.jobs} jobs of {whose} failed in a row with signs of the site "
                f"({', '.join(self.codes)})")


def raised_bans(ends: Iterable[AttemptEnd], rule: BanRule = BanRule(),
                lifted_at: float | None = None,
                completed_elsewhere: Set[str] = frozenset()) -> list[Raised]:
    """Every ban `ends` (one site's ended attempts, any order) raised, in order.
    `lifted_at`: when an admin last lifted a ban there (what ended by then is ignored);
    `completed_elsewhere`: programs that completed recently at other sites."""
    ordered = sorted((e for e in ends if lifted_at is None or e.ended_at > lifted_at),
                     key=lambda e: e.ended_at)
    completed = {e.program for e in ordered if e.ok} | completed_elsewhere
    row: list[tuple[AttemptEnd, Sign]] = []
    raised: list[Raised] = []
    escalation = 0
    for end in ordered:
        if end.ok:
            row, escalation = [], 0
            continue
        sign = site_sign(end, completed)
        if sign is None:
            continue  # the job's own failure: not the site's, and no proof it works
        row.append((end, sign))
        if _enough(row):
            length = min(rule.base_seconds * 2 ** escalation, rule.max_seconds)
            raised.append(Raised(end.ended_at, end.ended_at + length, len(row),
                                 frozenset(e.owner for e, _ in row),
                                 len({e.program for e, _ in row}),
                                 tuple(dict.fromkeys(sign.code for _, sign in row))))
            row, escalation = [], escalation + 1
    return raised


def ban_in_force(ends: Iterable[AttemptEnd], now: float, rule: BanRule = BanRule(),
                 lifted_at: float | None = None,
                 completed_elsewhere: Set[str] = frozenset()) -> Ban | None:
    """The ban `ends` (as `raised_bans` takes them) put on the site at `now`, if any."""
    raised = raised_bans(ends, rule, lifted_at, completed_elsewhere)
    if not raised or raised[-1].until <= now:
        return None
    until = raised[-1].until
    at = datetime.fromtimestamp(until, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return Ban(until, f"{raised[-1].why()}; out of routing until {at} "
                      f"({until - now:.0f} s more)")
