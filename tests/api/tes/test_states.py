"""A job's state as a TES task state: every job state and failure kind, against the
published enumeration."""

from __future__ import annotations

import pytest

from gateway.api.tes.states import TesState, tes_state
from gateway.domain.states import JobState
from tests.api.tes.spec import schema


def test_the_states_are_the_specifications() -> None:
    assert [state.value for state in TesState] == schema("tesState")["enum"]


@pytest.mark.parametrize(("state", "columns", "expected"), [
    ("ACCEPTED", {}, "QUEUED"),
    ("ACCEPTED", {"held": True}, "PAUSED"),
    ("ACCEPTED", {"held": True, "cancel_requested": True}, "CANCELING"),
    ("STAGING_IN", {}, "INITIALIZING"),
    ("QUEUED", {}, "QUEUED"),
    ("QUEUED", {"cancel_requested": True}, "CANCELING"),
    ("RUNNING", {}, "RUNNING"),
    ("STAGING_OUT", {}, "RUNNING"),
    ("COMPLETED", {"cancel_requested": True}, "COMPLETE"),  # finished before the cancel
    ("CANCELLED", {"cancel_requested": True}, "CANCELED"),
    ("FAILED", {"reason": "PREEMPTED"}, "PREEMPTED"),
    ("FAILED", {"reason": "NonZeroExitCode", "exit_code": 3}, "EXECUTOR_ERROR"),
    ("FAILED", {"reason": "killed by signal 9"}, "EXECUTOR_ERROR"),
    ("FAILED", {"reason": "TIMEOUT"}, "EXECUTOR_ERROR"),
    ("FAILED", {"reason": "OUT_OF_MEMORY", "exit_code": 137}, "EXECUTOR_ERROR"),
    ("FAILED", {"exit_code": 2}, "EXECUTOR_ERROR"),
    ("FAILED", {"reason": "NODE_FAIL"}, "SYSTEM_ERROR"),
    ("FAILED", {"reason": "BOOT_FAIL"}, "SYSTEM_ERROR"),
    ("FAILED", {"reason": "STAGE_IN_FAILED: no such file"}, "SYSTEM_ERROR"),
    # The program succeeded and its outputs could not be fetched: not the executor's.
    ("FAILED", {"reason": "completed; STAGE_OUT_FAILED: disk full", "exit_code": 0},
     "SYSTEM_ERROR"),
    ("FAILED", {"reason": "SUBMIT_REJECTED: invalid account"}, "SYSTEM_ERROR"),
    ("FAILED", {}, "SYSTEM_ERROR"),
    ("SOMETHING_NEW", {}, "UNKNOWN"),
])
def test_job_states_map_to_tes(state: str, columns: dict[str, object], expected: str) -> None:
    assert tes_state(state, **columns) == expected  # type: ignore[arg-type]


def test_every_job_state_has_a_tes_state() -> None:
    for state in JobState:
        assert tes_state(state.value) in TesState
