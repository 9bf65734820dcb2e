"""Job dependencies: Slurm's afterok/afterany/afternotok, the --dependency text, and the
readiness rule (satisfied, waiting, never satisfiable) with its reason."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from gateway.domain.states import FINAL_STATES
from workflows.dependencies import (
    DependencyStatus,
    DependencyType,
    Ended,
    JobDependency,
    Readiness,
    array_outcome,
    check_dependencies,
    dependency_status,
    format_dependency_option,
    parse_dependency_option,
)
from workflows.errors import InvalidDependency, LimitExceeded
from workflows.limits import Limits

A = "aaaaaaaa-0000-4000-8000-000000000001"
B = "bbbbbbbb-0000-4000-8000-000000000002"
C = "cccccccc-0000-4000-8000-000000000003"
OK, ANY, NOTOK = DependencyType.AFTEROK, DependencyType.AFTERANY, DependencyType.AFTERNOTOK


def dep(job: str, when: DependencyType) -> JobDependency:
    return JobDependency(job=job, when=when)


def test_ended_is_the_gateways_final_states() -> None:
    assert {e.value for e in Ended} == {s.value for s in FINAL_STATES}


@pytest.mark.parametrize(("text", "expected"), [
    (f"afterok:{A}", [dep(A, OK)]),
    (f"afterok:{A}:{B}", [dep(A, OK), dep(B, OK)]),
    (f"afterok:{A}:{B},afterany:{C}", [dep(A, OK), dep(B, OK), dep(C, ANY)]),
    (f"afternotok:{A}", [dep(A, NOTOK)]),
    # Repeats count once; afterany beside afterok on one job is redundant, not wrong.
    (f"afterok:{A},afterok:{A}", [dep(A, OK)]),
    (f"afterok:{A},afterany:{A}", [dep(A, OK), dep(A, ANY)]),
])
def test_dependency_option(text: str, expected: list[JobDependency]) -> None:
    assert list(parse_dependency_option(text)) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("", "The --dependency option is empty: write afterok:ID, afterany:ID or afternotok:ID."),
    (A, f"'{A}': say when the job may start: afterok:{A}, afterany:{A} or afternotok:{A}."),
    ("12345", "'12345': '12345' is not TYPE:ID (afterok:ID, afterany:ID or afternotok:ID)."),
    (f"after:{A}", f"'after:{A}': Slurm's 'after' is not supported by the gateway: use "
                   "afterok, afterany or afternotok."),
    ("singleton:x", "'singleton:x': Slurm's 'singleton' is not supported by the gateway: use "
                    "afterok, afterany or afternotok."),
    (f"afterOK:{A}", f"'afterOK:{A}': 'afterOK' is not a dependency type: use afterok, "
                     "afterany or afternotok."),
    (f"afterok:{A}?afterany:{B}", f"'afterok:{A}?afterany:{B}': '?' (any of) is not "
                                  "supported; ',' joins dependencies that must all be "
                                  "satisfied (afterok:ID1,afterany:ID2)."),
    (f"afterok:{A}+10", f"'afterok:{A}+10': a delay after a job ('{A}+10') is not supported: "
                        "give the job id alone."),
    ("afterok:123", "'afterok:123': '123' is not a valid job id: give the job's whole id in "
                    "lower case, as `gridgate list` shows it "
                    "(e.g. d3eca39f-5b1e-4c5e-9a0e-0c1f2a3b4c5d)."),
    (f"afterok:{A.upper()}", f"'afterok:{A.upper()}': '{A.upper()}' is not a valid job id: "
                             "give the job's whole id in lower case, as `gridgate list` shows "
                             "it (e.g. d3eca39f-5b1e-4c5e-9a0e-0c1f2a3b4c5d)."),
    (f"afterok:{A},afternotok:{A}", f"The job would wait for job {A} both to complete "
                                    "(afterok) and to fail (afternotok), which can never both "
                                    "happen: keep one, or use afterany."),
])
def test_refused_dependency_options(text: str, message: str) -> None:
    with pytest.raises(InvalidDependency) as caught:
        parse_dependency_option(text)
    assert str(caught.value) == message


@pytest.mark.parametrize("text", [f"afterok:{A}\n", f" afterok:{A}", f"afterok:{A},",
                                  f"afterok::{A}", f"afterok:{A}:", "afterok:", f",afterok:{A}",
                                  f"afterok:{A}\n{B}"])
def test_malformed_options_are_refused(text: str) -> None:
    with pytest.raises(InvalidDependency):
        parse_dependency_option(text)


def test_dependency_limits() -> None:
    limits = Limits(max_dependencies=2, max_text=200)
    assert len(parse_dependency_option(f"afterok:{A}:{B}", limits)) == 2
    with pytest.raises(LimitExceeded, match="the number of dependencies is 3, above the "
                                            "gateway's limit of 2"):
        parse_dependency_option(f"afterok:{A}:{B}:{C}", limits)
    assert parse_dependency_option(f"afterok:{A}", Limits(max_text=44))
    with pytest.raises(LimitExceeded, match="the length of the --dependency option is 44, "
                                            "above the gateway's limit of 43"):
        parse_dependency_option(f"afterok:{A}", Limits(max_text=43))


def test_depends_on_entries_are_validated_by_the_model() -> None:
    assert JobDependency.model_validate({"job": A, "when": "afterany"}) == dep(A, ANY)
    for bad in ({"job": A}, {"job": A, "when": "after"}, {"job": "x", "when": "afterok"},
                {"job": A, "when": "afterok", "delay": 1}):
        with pytest.raises(ValidationError):
            JobDependency.model_validate(bad)
    with pytest.raises(InvalidDependency):
        check_dependencies([dep(A, NOTOK), dep(A, OK)])
    schema = JobDependency.model_json_schema()
    assert schema["required"] == ["job", "when"]
    assert schema["properties"]["job"]["pattern"].startswith("^(?:[0-9a-f]{8}-")


@given(st.lists(st.tuples(st.sampled_from([A, B, C]), st.sampled_from([OK, ANY])),
                min_size=1, max_size=6))
def test_format_and_parse_round_trip(pairs: list[tuple[str, DependencyType]]) -> None:
    deps = check_dependencies([dep(job, when) for job, when in pairs])
    assert parse_dependency_option(format_dependency_option(deps)) == deps


def test_format_groups_consecutive_types() -> None:
    deps = [dep(A, OK), dep(B, OK), dep(C, ANY), dep(A, ANY)]
    assert format_dependency_option(deps) == f"afterok:{A}:{B},afterany:{C}:{A}"


# (type, how the job ended) -> readiness: Slurm's table.
RULE = [
    (OK, None, Readiness.WAITING),
    (OK, Ended.COMPLETED, Readiness.SATISFIED),
    (OK, Ended.FAILED, Readiness.NEVER),
    (OK, Ended.CANCELLED, Readiness.NEVER),
    (ANY, None, Readiness.WAITING),
    (ANY, Ended.COMPLETED, Readiness.SATISFIED),
    (ANY, Ended.FAILED, Readiness.SATISFIED),
    (ANY, Ended.CANCELLED, Readiness.SATISFIED),
    (NOTOK, None, Readiness.WAITING),
    (NOTOK, Ended.COMPLETED, Readiness.NEVER),
    (NOTOK, Ended.FAILED, Readiness.SATISFIED),
    # Slurm: afternotok is satisfied by any end but COMPLETED, a cancel included.
    (NOTOK, Ended.CANCELLED, Readiness.SATISFIED),
]


@pytest.mark.parametrize(("when", "end", "readiness"), RULE)
def test_the_rule_for_one_dependency(when: DependencyType, end: Ended | None,
                                     readiness: Readiness) -> None:
    assert dependency_status([dep(A, when)], {A: end}).readiness == readiness


@pytest.mark.parametrize(("deps", "ends", "expected"), [
    ([], {}, DependencyStatus(Readiness.SATISFIED, "dependencies satisfied")),
    ([dep(A, OK), dep(B, ANY)], {A: Ended.COMPLETED, B: Ended.FAILED},
     DependencyStatus(Readiness.SATISFIED, "dependencies satisfied")),
    ([dep(A, OK), dep(B, ANY)], {A: None, B: None},
     DependencyStatus(Readiness.WAITING, f"waiting for job {A} (afterok), job {B} (afterany)")),
    ([dep(A, OK), dep(B, ANY)], {A: Ended.COMPLETED, B: None},
     DependencyStatus(Readiness.WAITING, f"waiting for job {B} (afterany)")),
    # All must hold: one that never will settles it, even while others are still waiting.
    ([dep(A, OK), dep(B, ANY)], {A: Ended.FAILED, B: None},
     DependencyStatus(Readiness.NEVER, f"job {A} failed, so afterok:{A} can never be "
                                       "satisfied")),
    ([dep(A, OK)], {A: Ended.CANCELLED},
     DependencyStatus(Readiness.NEVER, f"job {A} was cancelled, so afterok:{A} can never be "
                                       "satisfied")),
    ([dep(A, NOTOK), dep(B, OK)], {A: Ended.COMPLETED, B: Ended.FAILED},
     DependencyStatus(Readiness.NEVER, f"job {A} completed, so afternotok:{A} can never be "
                                       f"satisfied; job {B} failed, so afterok:{B} can never "
                                       "be satisfied")),
    ([dep(C, ANY)], {A: None},
     DependencyStatus(Readiness.NEVER, f"job {C} is not known (afterany:{C})")),
])
def test_the_rule_for_a_job(deps: list[JobDependency], ends: dict[str, Ended | None],
                            expected: DependencyStatus) -> None:
    assert dependency_status(deps, ends) == expected


def test_slurm_reasons() -> None:
    assert DependencyStatus(Readiness.WAITING, "").slurm_reason == "Dependency"
    assert DependencyStatus(Readiness.NEVER, "").slurm_reason == "DependencyNeverSatisfied"
    assert DependencyStatus(Readiness.SATISFIED, "").slurm_reason is None


@pytest.mark.parametrize(("tasks", "expected"), [
    ([Ended.COMPLETED, None], None),
    # Slurm waits for the whole array before a verdict, even once one task has failed.
    ([Ended.FAILED, None], None),
    ([Ended.COMPLETED, Ended.COMPLETED], Ended.COMPLETED),
    ([Ended.COMPLETED, Ended.FAILED, Ended.CANCELLED], Ended.FAILED),
    ([Ended.COMPLETED, Ended.CANCELLED], Ended.CANCELLED),
])
def test_an_array_job_as_a_whole(tasks: list[Ended | None], expected: Ended | None) -> None:
    assert array_outcome(tasks) == expected


def test_an_array_has_tasks() -> None:
    with pytest.raises(InvalidDependency):
        array_outcome([])
