"""Black-hole bans (pure): only failures with signs of the site count, and only when they
are not one user's (or, for the scheduler's own word, one program's) alone."""

from __future__ import annotations

import pytest

from adapters.reasons import Reason, because
from gateway.scheduling.black_holes import AttemptEnd, BanRule, Sign, ban_in_force, site_sign

RULE = BanRule(base_seconds=100, max_seconds=300)
NODE = str(Reason.NODE_FAIL)
STAGING = str(because(Reason.STAGE_IN_FAILED, "no space left on device"))


def failed(at: float, owner: str = "ann", reason: str = NODE, program: str = "a.out",
           exit_code: int | None = None) -> AttemptEnd:
    return AttemptEnd(at, owner, program, False, reason, exit_code)


def ok(at: float, owner: str = "ann", program: str = "a.out") -> AttemptEnd:
    return AttemptEnd(at, owner, program, True)


def rotating(times: range, reason: str = NODE) -> list[AttemptEnd]:
    """Failures of users taking turns (ann, bob, cat, ann, ...)."""
    return [failed(t, ("ann", "bob", "cat")[i % 3], reason) for i, t in enumerate(times)]


def test_a_users_own_failing_program_bans_nothing() -> None:
    # The case: three `--exe /bin/false` (NonZeroExitCode, exit 1) in seconds.
    own = [failed(t, reason=str(Reason.NON_ZERO_EXIT), exit_code=1) for t in (1, 2, 3)]
    assert ban_in_force(own, now=4, rule=RULE) is None
    # Its own kinds of failure, from any number of users, never count.
    for reason in (Reason.NON_ZERO_EXIT, Reason.TIMEOUT, Reason.OUT_OF_MEMORY,
                   because(Reason.KILLED_BY_SIGNAL, 9, " "), Reason.PREEMPTED):
        assert ban_in_force(rotating(range(1, 10), str(reason)), now=10, rule=RULE) is None


def test_one_users_failures_even_with_weak_signs_ban_nothing() -> None:
    # Their inputs or image may be at fault: staging, the container runtime.
    for reason in (STAGING, "NonZeroExitCode; container runtime: could not open image"):
        ends = [failed(t, reason=reason, program=f"p{t}") for t in range(1, 10)]
        assert ban_in_force(ends, now=10, rule=RULE) is None


def test_one_user_one_program_with_strong_signs_bans_nothing() -> None:
    assert ban_in_force([failed(t) for t in range(1, 10)], now=10, rule=RULE) is None


def test_one_users_repeats_count_once() -> None:
    # Ann retrying one program many times, then Bob once: two voices, not a row of three.
    ends = [*(failed(t, "ann", STAGING) for t in range(1, 10)), failed(10, "bob", STAGING)]
    assert ban_in_force(ends, now=11, rule=RULE) is None
    ban = ban_in_force([*ends, failed(11, "ann", STAGING, program="b.out")], now=12,
                       rule=RULE)
    assert ban is not None and ban.reason.startswith(
        "11 jobs of 2 users failed in a row with signs of the site (STAGE_IN_FAILED)")


def test_several_users_failing_with_signs_of_the_site_ban_it() -> None:
    ends = [failed(10, "ann"), failed(20, "bob"), failed(30, "cat", STAGING)]
    ban = ban_in_force(ends, now=50, rule=RULE)
    assert ban is not None and ban.until == 130
    assert ban.reason == ("3 jobs of 3 users failed in a row with signs of the site "
                          "(NODE_FAIL, STAGE_IN_FAILED); out of routing until "
                          "1970-01-01 00:02:10 UTC (80 s more)")
    assert ban_in_force(ends, now=130, rule=RULE) is None  # it ends on time
    assert ban_in_force(ends[:2], now=50, rule=RULE) is None  # two are not a row


def test_one_user_with_several_programs_and_strong_signs_bans_it() -> None:
    ends = [failed(t, program=p) for t, p in ((1, "a"), (2, "b"), (3, "a"), (4, "c"))]
    assert ban_in_force(ends[:3], now=4, rule=RULE) is None
    ban = ban_in_force(ends, now=5, rule=RULE)
    assert ban is not None and ban.reason.startswith(
        "4 jobs of 3 programs failed in a row with signs of the site (NODE_FAIL)")


@pytest.mark.parametrize(("reason", "sign"), [
    (NODE, Sign("NODE_FAIL", True)),
    (str(Reason.BOOT_FAIL), Sign("BOOT_FAIL", True)),
    (str(because(Reason.FAILED_AT_START, "failed 26: opening input/output file")),
     Sign("failed at start", True)),
    (str(because(Reason.CANNOT_PREPARE_SANDBOX, "[Errno 28]")),
     Sign("cannot prepare the job's sandbox", True)),
    (str(because(Reason.RUNNER_ERROR, "boom")), Sign("runner error", True)),
    (STAGING, Sign("STAGE_IN_FAILED", False)),
    ("exit code 1; STAGE_OUT_FAILED: permission denied", Sign("STAGE_OUT_FAILED", False)),
    ("NonZeroExitCode; container runtime: FATAL", Sign("container runtime", False)),
    (str(Reason.NON_ZERO_EXIT), None),
    ("", None),
])
def test_signs_of_the_site(reason: str, sign: Sign | None) -> None:
    assert site_sign(failed(1, reason=reason), frozenset()) == sign


def test_a_program_not_found_is_the_sites_only_where_it_runs_elsewhere() -> None:
    missing = [failed(t, ("ann", "bob", "cat")[t % 3],
                      str(because(Reason.LAUNCH_FAILED, "no such")), "/opt/app/bin/solve", 127)
               for t in (1, 2, 3)]
    # A typo (a program that never ran anywhere) is the program's own failure.
    assert ban_in_force(missing, now=4, rule=RULE) is None
    ban = ban_in_force(missing, now=4, rule=RULE,
                       completed_elsewhere=frozenset({"/opt/app/bin/solve"}))
    assert ban is not None and "(exit 127 for a program that runs elsewhere)" in ban.reason
    # It ran here before, and is gone now: the site changed.
    assert ban_in_force([ok(0, program="/opt/app/bin/solve"), *missing], now=4,
                        rule=RULE) is not None


def test_own_failures_neither_count_nor_break_the_row() -> None:
    own = failed(15, "cat", str(Reason.NON_ZERO_EXIT), exit_code=2)
    ban = ban_in_force([failed(10, "ann"), own, failed(20, "bob"), failed(30, "cat")],
                       now=31, rule=RULE)
    assert ban is not None and ban.until == 130


def test_repeated_bans_double_up_to_the_cap() -> None:
    ends = rotating(range(1, 13))  # four rows of three, ending at 3, 6, 9, 12
    ban = ban_in_force(ends[:6], now=6, rule=RULE)
    assert ban is not None and ban.until == 6 + 200
    ban = ban_in_force(ends, now=12, rule=RULE)
    assert ban is not None and ban.until == 12 + 300  # 800 capped at 300


def test_a_success_ends_the_row_and_the_escalation() -> None:
    assert ban_in_force([failed(10, "ann"), failed(20, "bob"), ok(25), failed(30, "cat")],
                        now=31, rule=RULE) is None
    ends = [*rotating(range(1, 4)), ok(4), *rotating(range(5, 8))]
    ban = ban_in_force(list(reversed(ends)), now=7, rule=RULE)  # any order
    assert ban is not None and ban.until == 107


def test_a_lifted_ban_forgets_what_ended_before() -> None:
    ends = rotating(range(1, 7))  # two bans: the second (at 6) for 200 s
    assert ban_in_force(ends, now=7, rule=RULE, lifted_at=6.5) is None
    # Failures after the lift ban again, from the base time (the escalation forgotten).
    ban = ban_in_force([*ends, *rotating(range(8, 11))], now=11, rule=RULE, lifted_at=6.5)
    assert ban is not None and ban.until == 110
