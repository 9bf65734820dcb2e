"""Retries: for the site's failures by default, the job's own only when asked, with a
doubling backoff."""

from __future__ import annotations

import pytest
import yaml
from pydantic import ValidationError

from workflows.retry import (
    MAX_DELAY_SECONDS,
    SITE_CAUSED,
    FailureCause,
    RetryDecision,
    RetryPolicy,
    decide_retry,
)

NODE, EXIT, TIMEOUT = FailureCause.NODE_FAIL, FailureCause.NONZERO_EXIT, FailureCause.TIMEOUT
DEFAULT = RetryPolicy()
WITH_EXIT = RetryPolicy(max=3, backoff_seconds=10, on=(NODE, EXIT))


@pytest.mark.parametrize(("policy", "failures", "cause", "expected"), [
    (DEFAULT, 1, NODE, RetryDecision(True, 60, "node_fail: retry 1 of 2 in 60 s")),
    (DEFAULT, 2, FailureCause.PREEMPTED, RetryDecision(True, 120, "preempted: retry 2 of 2 "
                                                                  "in 120 s")),
    (DEFAULT, 3, NODE, RetryDecision(False, 0, "node_fail: the 2 retries of retry.max are "
                                               "used up")),
    (DEFAULT, 1, FailureCause.BOOT_FAIL, RetryDecision(True, 60, "boot_fail: retry 1 of 2 in "
                                                                 "60 s")),
    # The job's own failure is not retried unless asked.
    (DEFAULT, 1, EXIT, RetryDecision(False, 0, "nonzero_exit is not retried (retry.on: "
                                               "node_fail, preempted, boot_fail)")),
    (DEFAULT, 1, TIMEOUT, RetryDecision(False, 0, "timeout is not retried (retry.on: "
                                                  "node_fail, preempted, boot_fail)")),
    (WITH_EXIT, 3, EXIT, RetryDecision(True, 40, "nonzero_exit: retry 3 of 3 in 40 s")),
    (WITH_EXIT, 1, None, RetryDecision(False, 0, "the cause of the failure is not known: not "
                                                 "retried")),
    (RetryPolicy(max=0), 1, NODE, RetryDecision(False, 0, "node_fail: the 0 retries of "
                                                          "retry.max are used up")),
    (RetryPolicy(on=()), 1, NODE, RetryDecision(False, 0, "node_fail is not retried "
                                                          "(retry.on: none)")),
    (RetryPolicy(max=30, backoff_seconds=3600), 20, NODE,
     RetryDecision(True, MAX_DELAY_SECONDS, f"node_fail: retry 20 of 30 in {MAX_DELAY_SECONDS} s")),
])
def test_decisions(policy: RetryPolicy, failures: int, cause: FailureCause | None,
                   expected: RetryDecision) -> None:
    assert decide_retry(policy, failures, cause) == expected


def test_decide_is_asked_after_a_failure() -> None:
    with pytest.raises(ValueError, match="failures >= 1"):
        decide_retry(DEFAULT, 0, NODE)


def test_the_default_retries_what_the_site_caused() -> None:
    assert DEFAULT.on == SITE_CAUSED == (NODE, FailureCause.PREEMPTED, FailureCause.BOOT_FAIL)
    assert (DEFAULT.max, DEFAULT.backoff_seconds) == (2, 60)


def test_the_yaml_key_on_is_read_as_written() -> None:
    # PyYAML (YAML 1.1) reads the key `on` as true; the policy takes it back.
    data = yaml.safe_load("max: 1\non: [nonzero_exit, nonzero_exit]\n")
    assert True in data
    assert RetryPolicy.model_validate(data) == RetryPolicy(max=1, on=(EXIT,))


@pytest.mark.parametrize("bad", [{"max": -1}, {"backoff_seconds": 3601}, {"on": ["oom"]},
                                 {"on": "node_fail"}, {"tries": 2}])
def test_refused_policies(bad: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        RetryPolicy.model_validate(bad)
