"""Why a step's job failed, as a retry policy names it (gateway.services.workflows.advance
.cause_of): the reason codes the adapters record, table-driven."""

from __future__ import annotations

import pytest

from gateway.db.models import Job
from gateway.services.workflows.advance import cause_of
from workflows.retry import FailureCause, RetryPolicy, decide_retry


@pytest.mark.parametrize(("reason", "exit_code", "cause"), [
    ("NODE_FAIL", None, FailureCause.NODE_FAIL),
    ("PREEMPTED", None, FailureCause.PREEMPTED),
    ("BOOT_FAIL", None, FailureCause.BOOT_FAIL),
    ("failed at start: qmgr 17", None, FailureCause.BOOT_FAIL),
    ("TIMEOUT", None, FailureCause.TIMEOUT),
    ("OUT_OF_MEMORY", 137, FailureCause.OUT_OF_MEMORY),
    ("NonZeroExitCode", 3, FailureCause.NONZERO_EXIT),
    ("killed by signal 9", None, FailureCause.NONZERO_EXIT),
    ("STAGE_IN_FAILED: no such file", None, None),
    (None, 2, FailureCause.NONZERO_EXIT),
    (None, None, None),
])
def test_causes(reason: str | None, exit_code: int | None, cause: FailureCause | None) -> None:
    assert cause_of(Job(reason=reason, exit_code=exit_code)) == cause


def test_only_site_caused_failures_are_retried_by_default() -> None:
    policy = RetryPolicy()
    retried = {c for c in FailureCause if decide_retry(policy, 1, c).retry}
    assert retried == {FailureCause.NODE_FAIL, FailureCause.PREEMPTED, FailureCause.BOOT_FAIL}
    assert not decide_retry(policy, 1, cause_of(Job(reason="STAGE_IN_FAILED"))).retry
