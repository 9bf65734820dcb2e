"""Readiness of a whole workflow: what to submit, skip or cancel now, and when it is done.
A table of situations, and a property test over random workflows run to their end."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.workflows.conftest import job, workflow
from workflows.errors import UnknownInstance
from workflows.plan import Plan, plan_workflow
from workflows.readiness import (
    FINAL_STEP_STATES,
    Advance,
    Skip,
    StepState,
    WorkflowState,
    advance,
)

P, R, C, F, X, S = (StepState.PENDING, StepState.RUNNING, StepState.COMPLETED,
                    StepState.FAILED, StepState.CANCELLED, StepState.SKIPPED)
RUNNING = WorkflowState.RUNNING

# a -> b, a -> c, (b, c) -> d; e on its own.
DIAMOND = workflow({"a": {}, "b": {"needs": ["a"]}, "c": {"needs": ["a"]},
                    "d": {"needs": ["b", "c"]}, "e": {}})
PLAN = plan_workflow(DIAMOND)
FAST = plan_workflow({**DIAMOND, "fail_fast": True})

CASES: list[tuple[str, Plan, dict[str, StepState], bool, Advance]] = [
    ("a new workflow", PLAN, {}, False, Advance(("a", "e"), (), (), RUNNING)),
    ("nothing twice", PLAN, {"a": R, "e": R}, False, Advance((), (), (), RUNNING)),
    ("after a completes", PLAN, {"a": C, "e": R}, False, Advance(("b", "c"), (), (), RUNNING)),
    ("d waits for both", PLAN, {"a": C, "b": C, "c": R, "e": C}, False,
     Advance((), (), (), RUNNING)),
    ("a failure skips only its descendants", PLAN, {"a": C, "b": F}, False,
     Advance(("c", "e"), (Skip("d", "needs b, which failed"),), (), RUNNING)),
    ("skips reach every descendant at once, naming the root", PLAN, {"a": F}, False,
     Advance(("e",), (Skip("b", "needs a, which failed"), Skip("c", "needs a, which failed"),
                      Skip("d", "needs b, which was skipped because a failed")), (), RUNNING)),
    ("a skip from an earlier pass", PLAN, {"a": C, "b": S, "c": C, "e": C}, False,
     Advance((), (Skip("d", "needs b, which was skipped"),), (), WorkflowState.CANCELLED)),
    ("a step cancelled alone skips its descendants", PLAN, {"a": X, "e": C}, False,
     Advance((), (Skip("b", "needs a, which was cancelled"),
                  Skip("c", "needs a, which was cancelled"),
                  Skip("d", "needs b, which was skipped because a was cancelled")), (),
             WorkflowState.CANCELLED)),
    ("finished with a failure", PLAN, {"a": C, "b": F, "c": C, "d": S, "e": C}, False,
     Advance((), (), (), WorkflowState.FAILED)),
    ("finished", PLAN, dict.fromkeys("abcde", C), False,
     Advance((), (), (), WorkflowState.COMPLETED)),
    ("a cancel cascades to every unfinished step", PLAN,
     {"a": C, "b": R, "e": R}, True, Advance((), (), ("c", "d", "b", "e"), RUNNING)),
    ("a cancel before anything ran", PLAN, {}, True,
     Advance((), (), ("a", "b", "c", "d", "e"), WorkflowState.CANCELLED)),
    ("a cancel of a finished workflow changes nothing", PLAN,
     {"a": C, "b": F, "c": C, "d": S, "e": C}, True, Advance((), (), (), WorkflowState.FAILED)),
    ("fail_fast: the first failure stops the rest", FAST, {"a": C, "b": F, "c": R}, False,
     Advance((), (Skip("d", "fail_fast: b failed"), Skip("e", "fail_fast: b failed")),
             ("c",), RUNNING)),
    ("fail_fast: done once the cancelled ones end", FAST,
     {"a": C, "b": F, "c": X, "d": S, "e": S}, False, Advance((), (), (), WorkflowState.FAILED)),
    ("fail_fast: a cancel is no failure", FAST, {"a": C, "b": X, "c": R}, False,
     Advance(("e",), (Skip("d", "needs b, which was cancelled"),), (), RUNNING)),
]


@pytest.mark.parametrize(("plan", "states", "cancel", "expected"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_advance(plan: Plan, states: dict[str, StepState], cancel: bool,
                 expected: Advance) -> None:
    assert advance(plan, states, cancel=cancel) == expected


def test_matrix_instances_wait_for_what_they_need() -> None:
    plan = plan_workflow(workflow({
        "solve": {"matrix": {"n": [1, 2]}, "job": job(outputs=["r"])},
        "pick": {"matrix": {"n": [1, 2]},
                 "inputs": [{"from": "solve[n=${{ matrix.n }}]:outputs/r", "dest": "r"}]},
        "all": {"needs": ["solve"]}}))
    got = advance(plan, {"solve[0]": C, "solve[1]": F})
    assert got == Advance(("pick[0]",), (Skip("pick[1]", "needs solve[n=2], which failed"),
                                         Skip("all", "needs solve[n=2], which failed")),
                          (), RUNNING)


def test_unknown_instances_are_refused() -> None:
    with pytest.raises(UnknownInstance, match="the workflow 'w' has no step instance 'zz'"):
        advance(PLAN, {"a": C, "zz": C})


@st.composite
def workflows(draw: st.DrawFn) -> dict[str, Any]:
    """A random DAG: steps needing earlier ones, some with a matrix, some gathering inputs."""
    steps: dict[str, dict[str, Any]] = {}
    for i in range(draw(st.integers(1, 6))):
        earlier = list(steps)
        step: dict[str, Any] = {"job": job(f"s{i}", outputs=["out"])}
        step["needs"] = draw(st.lists(st.sampled_from(earlier), unique=True)) if earlier else []
        width = draw(st.integers(0, 3))
        if width:
            step["matrix"] = {"n": list(range(width))}
        if earlier and draw(st.booleans()):
            source = draw(st.sampled_from(earlier))
            selector = "[*]" if "matrix" in steps[source] else ""
            step["inputs"] = [{"from": f"{source}{selector}:outputs/out", "dest": "in"}]
        steps[f"s{i}"] = step
    return {"name": "random", "fail_fast": draw(st.booleans()), "steps": steps}


def _ancestors(plan: Plan) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for instance in plan.instances:  # producers first
        found[instance.id] = set(instance.needs).union(*(found[n] for n in instance.needs))
    return found


@settings(max_examples=300, deadline=None)
@given(workflows(), st.data())
def test_every_run_respects_needs_and_ends(data: dict[str, Any], draw: st.DataObject) -> None:
    plan = plan_workflow(data)
    ancestors = _ancestors(plan)
    needs = {i.id: i.needs for i in plan.instances}
    states: dict[str, StepState] = {}
    submitted: set[str] = set()
    cancelled_workflow = False
    stopping: set[str] = set()  # running instances the gateway was asked to cancel
    for _ in range(4 * len(plan.ids) + 4):
        now = {i: states.get(i, P) for i in plan.ids}
        cancel = cancelled_workflow or (not cancelled_workflow and draw.draw(
            st.integers(0, 30)) == 0)
        cancelled_workflow = cancel
        step = advance(plan, states, cancel=cancel)
        for instance in step.submit:
            # Never before everything it needs completed; never twice.
            assert now[instance] == P and instance not in submitted
            assert all(now[n] == C for n in needs[instance])
            submitted.add(instance)
            states[instance] = R
        for skip in step.skip:
            assert now[skip.instance] == P
            states[skip.instance] = S
        for instance in step.cancel:
            assert cancel or plan.fail_fast
            assert now[instance] in (P, R)
            if now[instance] == P:
                states[instance] = X
            else:
                stopping.add(instance)
        if step.finished:
            break
        running = sorted(i for i in plan.ids if states.get(i) == R)
        assert running, f"stuck: {states}"  # something must be able to move
        instance = draw.draw(st.sampled_from(running))
        outcome = X if instance in stopping else draw.draw(st.sampled_from([C, C, C, F, X]))
        states[instance] = outcome
    else:
        pytest.fail(f"not finished: {states}")
    # Every instance ended, and the workflow's state says how.
    assert set(states) == set(plan.ids)
    assert all(s in FINAL_STEP_STATES for s in states.values())
    final = set(states.values())
    if F in final:
        assert step.state == WorkflowState.FAILED
    elif final == {C}:
        assert step.state == WorkflowState.COMPLETED
    else:
        assert step.state == WorkflowState.CANCELLED
    if not plan.fail_fast and not cancelled_workflow:
        # A failure fails only its descendants: the rest ran to its own end.
        for instance, state in states.items():
            broken = any(states[a] in (F, X) for a in ancestors[instance])
            assert (state == S) == broken, (instance, states)
