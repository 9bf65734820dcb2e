"""Waiting for a workflow to end: on the event stream filtered to its steps' jobs, or by
polling where the stream is not to be had (gateway.client.stream_waits).

The workflow's own state is settled by the gateway's worker after the change of a job
that ends it, and that settling is no event. So whenever every step's job has ended
(or a step has none yet: a retry waiting for its backoff) while the workflow still
runs, no event is to come until the gateway acts by itself: the workflow is read on a
timer then, and followed on the stream again once one of its jobs is under way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gateway.client.models import FINAL_STATES
from gateway.client.stream_waits import on_stream, passed, poll_until, stream_or_poll
from gateway.schemas.workflows import WorkflowOut

if TYPE_CHECKING:
    from gateway.client.workflow_api import WorkflowMethods

# A workflow's states once it has ended.
WORKFLOW_FINAL = frozenset({"completed", "failed", "cancelled"})


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

    def watch() -> WorkflowOut | None:
        while True:
            workflow = on_stream(client, [("workflow", workflow_id)], read,
                                 lambda w: ended(w) or quiet(w), deadline)
            if workflow is None or ended(workflow) or passed(deadline):
                return workflow
            # Quiet: read until it has ended or a job of it is under way again.
            workflow = poll_until(read, lambda w: ended(w) or not quiet(w), deadline,
                                  poll_seconds)
            if ended(workflow) or passed(deadline):
                return workflow

    return stream_or_poll(watch, lambda: poll_until(read, ended, deadline, poll_seconds))


def ended(workflow: WorkflowOut) -> bool:
    return workflow["state"] in WORKFLOW_FINAL


def quiet(workflow: WorkflowOut) -> bool:
    """True when no job of the workflow is under way: no event is to come for it."""
    return all(step["job_state"] is None or step["job_state"] in FINAL_STATES
               for step in workflow["steps"] or [])
