"""Bans a workload log would have raised, under today's rule and the former one (pure)."""

from __future__ import annotations

from gateway.scheduling.evaluation.ban_eval import evaluate_bans
from gateway.scheduling.swf import parse_job


def job(number: int, submit: int, run: int, status: int, user: int, exe: int = 1) -> str:
    # SWF: number submit wait run procs cpu mem req_procs req_time req_mem status user
    # group executable queue partition preceding think
    return f"{number} {submit} 0 {run} 1 -1 -1 1 3600 -1 {status} {user} 1 {exe} 1 1 -1 -1"


def test_one_users_quick_failures_ban_only_under_the_former_rule() -> None:
    lines = [
        # User 1 debugs: three quick failures of one program (ends 10, 20, 30).
        job(1, 0, 10, 0, user=1), job(2, 10, 10, 0, user=1), job(3, 20, 10, 0, user=1),
        # User 9 submits while the former rule's ban (30 .. 630) is in force.
        job(4, 100, 1000, 1, user=9),
        # Users 2, 3 and 4 then fail quickly in turn (ends 1110, 1120, 1130).
        job(5, 1100, 10, 0, user=2), job(6, 1110, 10, 0, user=3), job(7, 1120, 10, 0, user=4),
        job(8, 1200, 1000, 1, user=9),  # submitted during the next ban
        job(9, 5000, 10, 5, user=4),  # cancelled: neither rule sees it
    ]
    result = evaluate_bans(parse_job(line) for line in lines)
    assert (result["ended_jobs"], result["failed_jobs"], result["quick_failures"]) == (8, 6, 6)
    assert result["former_rule"] == {
        "bans": 2, "banned_hours": round(1200 / 3600, 1), "raised_by_one_user_alone": 1,
        "other_users_jobs_submitted_during_bans": 2}
    today = result["todays_rule"]
    assert isinstance(today, dict)
    assert today["quick_failures_as_weak_signs"] == {
        "bans": 1, "banned_hours": round(600 / 3600, 1), "raised_by_one_user_alone": 0,
        "other_users_jobs_submitted_during_bans": 1}
    assert today["quick_failures_as_own_exits"]["bans"] == 0
