"""Waiting for a workflow to end: on the event stream of the workflow (its state, its
steps' and their jobs' changes), or by polling where the stream is not to be had
(gateway.client.stream_waits).

The gateway's worker settles a workflow (its end, a retry after its backoff) by itself,
and says so with an `org.gridgate.workflow.state` or `.step` event: the wait reads the
workflow after each, and never on a timer. A gateway older than those events refuses
them as a filter (422): there, whenever every step's job has ended (or a step has none
yet) while the workflow still runs, no event is to come until the gateway acts, so the
workflow is read on a timer then, and followed on the stream again once one of its jobs
is under way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway.client.errors import ProblemError
from gateway.client.models import FINAL_STATES
from gateway.client.stream_waits import on_stream, passed, poll_until, stream_or_poll
from gateway.schemas.events import JOB_STATE_TYPE, WORKFLOW_STATE_TYPE, WORKFLOW_STEP_TYPE
from gateway.schemas.workflows import WorkflowOut

if TYPE_CHECKING:
    from gateway.client.workflow_api import WorkflowMethods

# A workflow's states once it has ended.
WORKFLOW_FINAL = frozenset({"completed", "failed", "cancelled"})
# The events a workflow's wait follows.
WORKFLOW_EVENTS = (JOB_STATE_TYPE, WORKFLOW_STATE_TYPE, WORKFLOW_STEP_TYPE)
# How a gateway without the workflow's own events answers a filter naming them.
UNKNOWN_TYPE = 422


def wait_for_workflow(client: WorkflowMethods, workflow_id: str, deadline: float | None,
                      on_update: Callable[[WorkflowOut], None] | None,
                      poll_seconds: float) -> WorkflowOut:
    """The workflow once it has ended, or the last view at `deadline` (a
    time.monotonic() value)."""

    def read() -> WorkflowOut:
        workflow = client.get_workflow(workflow_id)
        if on_update is not None:
            on_update(workflow)
        return workflow

    has_workflow_events = True

    def watch() -> WorkflowOut | None:
        nonlocal has_workflow_events
        if has_workflow_events:
            params = [("workflow", workflow_id), *(("type", t) for t in WORKFLOW_EVENTS)]
            try:
                return on_stream(client, params, read, ended, deadline, types=WORKFLOW_EVENTS)
            except ProblemError as exc:
                if exc.status != UNKNOWN_TYPE:
                    raise
                has_workflow_events = False
        return watch_jobs()

    def watch_jobs() -> WorkflowOut | None:
        # An older gateway: its jobs' events, and a timer while none of them is under way.
        while True:
            workflow = on_stream(client, [("workflow", workflow_id)], read,
                                 lambda w: ended(w) or quiet(w), deadline)
            if workflow is None or ended(workflow) or passed(deadline):
                return workflow
            workflow = poll_until(read, lambda w: ended(w) or not quiet(w), deadline,
                                  poll_seconds)
            if ended(workflow) or passed(deadline):
                return workflow

    return stream_or_poll(watch, lambda: poll_until(read, ended, deadline, poll_seconds))


def ended(workflow: WorkflowOut) -> bool:
    return workflow["state"] in WORKFLOW_FINAL


def quiet(workflow: WorkflowOut) -> bool:
    """True when no job of the workflow is under way: an older gateway sends no event for
    it until it acts by itself."""
    return all(step["job_state"] is None or step["job_state"] in FINAL_STATES
               for step in workflow["steps"] or [])
