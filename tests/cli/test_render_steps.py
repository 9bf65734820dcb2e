"""`gridgate show` of a job of several steps (a GA4GH TES task's executors) gives each
step's exit code beside the job's."""

from __future__ import annotations

from gateway.cli import render
from tests.cli.test_render_unrouted import job, text


def test_a_job_of_several_steps_shows_each_step_s_exit_code() -> None:
    attempt = {"number": 1, "site": "local", "native_id": "1", "state": "COMPLETED",
               "raw_state": None, "reason": None, "exit_code": 0,
               "step_exit_codes": [0, 3, 0], "submitted_at": None, "started_at": None,
               "ended_at": None}
    shown = " ".join(text(render.job_details(job(state="COMPLETED", exit_code=0,
                                                 site="local", attempts=[attempt]))).split())
    assert "Exit code 0 (steps: 0, 3, 0)" in shown
    plain = " ".join(text(render.job_details(job(exit_code=2))).split())
    assert "Exit code 2 " in plain
