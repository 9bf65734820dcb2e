"""A job as a TES task document: each view valid against the published schema, with
what each view must and must not carry."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import jsonschema
import pytest

from gateway.api.tes.task_document import Tails, View, task_document
from gateway.schemas.jobs import AttemptOut, JobOut
from tests.api.tes.spec import validate

AT = datetime(2026, 12, 4, 3, 0, tzinfo=UTC)


def attempt(number: int, state: str, exit_code: int | None, reason: str | None,
            steps: list[int] | None = None) -> AttemptOut:
    return AttemptOut(number=number, site="kth", native_id=f"{number}00", state=state,
                      raw_state=None, reason=reason, exit_code=exit_code,
                      step_exit_codes=steps, submitted_at=AT, started_at=AT,
                      ended_at=AT if exit_code is not None else None)


def job(**changes: Any) -> JobOut:
    spec = {"name": "align", "executable": "echo", "args": ["hi"], "site": "kth",
            "container": {"image": "docker://alpine:3", "environment": {"A": "1"}},
            "resources": {"threads_per_rank": 2, "memory_mb": 954, "scratch_mb": 9537}}
    value = JobOut(id="0b5c4f7e", name="align", owner="ada", project="astro",
                   state="FAILED", reason="NODE_FAIL", raw_state="NODE_FAIL", site="kth",
                   exit_code=None, cancel_requested=False, held=False, array_job_id=None,
                   array_index=None, created_at=AT, updated_at=AT, started_at=AT,
                   ended_at=AT, labels={"run": "7"}, spec=spec,
                   attempts=[attempt(1, "FAILED", 1, "NODE_FAIL"),
                             attempt(2, "REVOKED", 0, "REVOKED"),
                             attempt(3, "RUNNING", None, None)])
    value.update(changes)  # type: ignore[typeddict-item]
    return value


@pytest.mark.parametrize("view", list(View))
def test_every_view_is_a_valid_task(view: View) -> None:
    validate(task_document(job(), view), "tesTask", view)
    validate(task_document(job(state="ACCEPTED", attempts=[]), view), "tesTask", view)


def test_what_each_view_carries() -> None:
    minimal = task_document(job(), View.MINIMAL)
    assert minimal == {"id": "0b5c4f7e", "state": "SYSTEM_ERROR"}
    basic = task_document(job(), View.BASIC)
    # A Docker reference as TES clients write it (they compare it with what they sent).
    assert basic["executors"] == [{"image": "alpine:3", "command": ["echo", "hi"],
                                   "env": {"A": "1"}}]
    assert basic["resources"] == {"cpu_cores": 2, "ram_gb": 1.0, "disk_gb": 10.0,
                                  "zones": ["kth"]}
    assert basic["tags"] == {"run": "7"} and basic["creation_time"] == AT.isoformat()
    # The hedge loser is not the task's; a run without an exit code has no executor log.
    assert [log["metadata"]["attempt"] for log in basic["logs"]] == ["1", "3"]
    assert basic["logs"][0]["logs"] == [{"start_time": AT.isoformat(),
                                         "end_time": AT.isoformat(), "exit_code": 1}]
    assert basic["logs"][1]["logs"] == []
    assert all("system_logs" not in log for log in basic["logs"])  # BASIC leaves them out
    full = task_document(job(), View.FULL)
    assert full["logs"][0]["system_logs"] == ["NODE_FAIL"]


def test_full_carries_the_ends_of_the_newest_run_s_output_or_why_not() -> None:
    ended = job(state="COMPLETED", attempts=[attempt(1, "FAILED", 1, "NODE_FAIL"),
                                             attempt(2, "COMPLETED", 0, None)])
    full = task_document(ended, View.FULL, Tails("out\n", "warn\n"))
    validate(full, "tesTask", View.FULL)
    assert "stdout" not in full["logs"][0]["logs"][0]  # an earlier run: not read
    newest = full["logs"][1]["logs"][0]
    assert (newest["stdout"], newest["stderr"]) == ("out\n", "warn\n")
    lost = task_document(ended, View.FULL, Tails(unreadable="kth is unreachable"))
    validate(lost, "tesTask", View.FULL)
    assert lost["logs"][1]["system_logs"] == ["kth is unreachable"]
    assert "stdout" not in lost["logs"][1]["logs"][0]


def test_the_validator_refuses_a_wrong_document() -> None:
    # The check above can fail: a state outside the enumeration is refused.
    with pytest.raises(jsonschema.ValidationError):
        validate({"id": "x", "state": "DONE", "executors": []}, "tesTask")


def test_each_executor_that_ran_has_its_exit_code() -> None:
    # Three executors, the second failing with its error ignored: the run completed.
    ran = job(state="COMPLETED", attempts=[attempt(1, "COMPLETED", 0, None, [0, 3, 0])])
    full = task_document(ran, View.FULL, Tails("out\n", ""))
    validate(full, "tesTask", View.FULL)
    assert full["logs"][0]["logs"] == [
        {"start_time": AT.isoformat(), "exit_code": 0}, {"exit_code": 3},
        {"end_time": AT.isoformat(), "exit_code": 0, "stdout": "out\n", "stderr": ""}]
    # The second failed: the third never ran.
    stopped = job(attempts=[attempt(1, "FAILED", 2, "NonZeroExitCode", [0, 2])])
    assert [e["exit_code"] for e in task_document(stopped, View.BASIC)["logs"][0]["logs"]] \
        == [0, 2]
