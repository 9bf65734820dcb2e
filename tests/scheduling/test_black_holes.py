"""Black-hole bans (pure)."""

from __future__ import annotations

from gateway.scheduling.black_holes import AttemptEnd, BanRule, ban_in_force

RULE = BanRule(quick_seconds=60, base_seconds=100, max_seconds=300)


def quick(at: float) -> AttemptEnd:
    return AttemptEnd(at, 5, True)


def test_three_quick_failures_ban_for_the_base_time() -> None:
    ends = [quick(10), quick(20), quick(30)]
    ban = ban_in_force(ends, now=50, rule=RULE)
    assert ban is not None and ban.until == 130
    assert ban.reason == ("3 jobs in a row failed within 60 s of starting; out of routing "
                          "for 80 s more")
    assert ban_in_force(ends, now=130, rule=RULE) is None  # it ends on time
    assert ban_in_force(ends[:2], now=50, rule=RULE) is None  # two are not a streak


def test_repeated_bans_double_up_to_the_cap() -> None:
    ends = [quick(t) for t in range(1, 13)]  # four streaks of three, ending at 3, 6, 9, 12
    ban = ban_in_force(ends[:6], now=6, rule=RULE)
    assert ban is not None and ban.until == 6 + 200
    ban = ban_in_force(ends, now=12, rule=RULE)
    assert ban is not None and ban.until == 12 + 300  # 800 capped at 300


def test_success_or_slow_failure_ends_the_streak_and_escalation() -> None:
    for breaker in (AttemptEnd(25, 5, False), AttemptEnd(25, 3600, True)):
        assert ban_in_force([quick(10), quick(20), breaker, quick(30)], now=31,
                            rule=RULE) is None
    # After a success, the next ban starts again at the base time.
    ends = [quick(1), quick(2), quick(3), AttemptEnd(4, 5, False),
            quick(5), quick(6), quick(7)]
    ban = ban_in_force(list(reversed(ends)), now=7, rule=RULE)  # any order
    assert ban is not None and ban.until == 107
