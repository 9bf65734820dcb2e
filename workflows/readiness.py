"""Which step instances may be submitted now, which can no longer run, and whether the
workflow has finished: a pure function of the plan and each instance's state.

The gateway calls `advance` whenever an instance's state changes, applies what it says
(submit, mark skipped, cancel) and calls again later; the answer only depends on the
states it is given. Instance states map from the gateway's job states: not yet submitted
-> pending; ACCEPTED to STAGING_OUT (retries included) -> running; then the final state.

- An instance is submitted once every instance it waits for has completed.
- A failed or cancelled instance skips its descendants, transitively, at once; the rest of
  the workflow goes on. With `fail_fast`, the first failure skips every pending instance
  and cancels every running one.
- A cancel of the workflow cancels every unfinished instance: pending ones at once, running
  ones listed in `cancel` until the gateway reports them ended.
- The workflow finishes when every instance is in a final state: FAILED if one failed,
  else COMPLETED if all completed, else CANCELLED.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from workflows.errors import UnknownInstance
from workflows.plan import Plan


class StepState(StrEnum):
    """Where one step instance stands."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SKIPPED = "skipped"


FINAL_STEP_STATES = frozenset({StepState.COMPLETED, StepState.FAILED, StepState.CANCELLED,
                               StepState.SKIPPED})
# An instance that waits for one of these can never run.
_BLOCKING = frozenset({StepState.FAILED, StepState.CANCELLED, StepState.SKIPPED})


class WorkflowState(StrEnum):
    """The workflow as a whole."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Skip:
    """A pending instance that can never run, and why (for its event)."""

    instance: str
    reason: str


@dataclass(frozen=True)
class Advance:
    """What to do now: instances to submit, to mark skipped, to cancel; and the workflow's
    state once the skips (and, on a cancel, the pending instances' cancels) are applied."""

    submit: tuple[str, ...]
    skip: tuple[Skip, ...]
    cancel: tuple[str, ...]
    state: WorkflowState

    @property
    def finished(self) -> bool:
        return self.state != WorkflowState.RUNNING


def advance(plan: Plan, states: Mapping[str, StepState], *, cancel: bool = False) -> Advance:
    """The next moves of `plan` given each instance's state (missing ones are pending);
    `cancel`: the workflow was cancelled."""
    ids = plan.ids
    unknown = sorted(i for i in states if i not in plan)
    if unknown:
        raise UnknownInstance(f"the workflow {plan.name!r} has no step instance {unknown[0]!r}")
    now = dict.fromkeys(ids, StepState.PENDING)
    now.update(states)

    def label(instance_id: str) -> str:
        return plan[instance_id].label

    if cancel:
        pending = [i for i in ids if now[i] == StepState.PENDING]
        now.update(dict.fromkeys(pending, StepState.CANCELLED))
        running = tuple(i for i in ids if now[i] == StepState.RUNNING)
        return Advance((), (), tuple(pending) + running, _state(now))
    failed = next((i for i in ids if now[i] == StepState.FAILED), None)
    if plan.fail_fast and failed is not None:
        skips = tuple(Skip(i, f"fail_fast: {label(failed)} failed")
                      for i in ids if now[i] == StepState.PENDING)
        now.update({s.instance: StepState.SKIPPED for s in skips})
        running = tuple(i for i in ids if now[i] == StepState.RUNNING)
        return Advance((), skips, running, _state(now))
    submit: list[str] = []
    skip: list[Skip] = []
    # Why each instance skipped here can never run: the failed or cancelled one at the root.
    root: dict[str, str] = {}
    waiting, completed = StepState.PENDING, StepState.COMPLETED
    for instance in plan.instances:  # producers first: a skip reaches all descendants
        if now[instance.id] != waiting:
            continue
        needs = instance.needs
        if all(now[d] == completed for d in needs):
            submit.append(instance.id)
            continue
        blocked = next((d for d in needs if now[d] in _BLOCKING), None)
        if blocked is not None:
            origin = root.get(blocked, blocked)
            root[instance.id] = origin
            reason = f"needs {label(blocked)}, which {_verb(now[blocked])}"
            if origin != blocked:
                reason += f" because {label(origin)} {_verb(now[origin])}"
            skip.append(Skip(instance.id, reason))
            now[instance.id] = StepState.SKIPPED
    return Advance(tuple(submit), tuple(skip), (), _state(now))


def _verb(state: StepState) -> str:
    return {StepState.FAILED: "failed", StepState.CANCELLED: "was cancelled",
            StepState.SKIPPED: "was skipped"}[state]


def _state(now: Mapping[str, StepState]) -> WorkflowState:
    present = set(now.values())
    if not present <= FINAL_STEP_STATES:
        return WorkflowState.RUNNING
    if StepState.FAILED in present:
        return WorkflowState.FAILED
    if present <= {StepState.COMPLETED}:
        return WorkflowState.COMPLETED
    return WorkflowState.CANCELLED
