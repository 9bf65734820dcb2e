"""Workflows in the REST client (docs/researchers/workflows.md): submit, list, show, wait,
cancel, events, and the spec's JSON Schema. `GatewayClient` has these methods too."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, cast

from gateway.client import workflow_waits
from gateway.client.errors import NotFoundError, problem_error
from gateway.client.transport import ClientBase, is_job_id, segment
from gateway.schemas.workflows import (
    WorkflowEventList,
    WorkflowEventOut,
    WorkflowList,
    WorkflowOut,
)
from rules.text import JOB_ID_PREFIX

# Workflows an ambiguous short id lists.
MAX_ID_CANDIDATES = 10


class WorkflowMethods(ClientBase):
    """/api/v1/workflows as methods."""

    def submit_workflow(self, spec: Mapping[str, Any], *,
                        idempotency_key: str | None = None) -> WorkflowOut:
        """POST /workflows: accept a workflow (202); every step instance becomes a job.
        The same key and body return the same workflow."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._document(WorkflowOut, "POST", "/workflows", json=dict(spec),
                              headers=headers)

    def list_workflows(self, *, state: str | None = None, mine: bool = False,
                       id_prefix: str | None = None, limit: int = 50,
                       cursor: str | None = None) -> WorkflowList:
        """GET /workflows: one page of your workflows, newest first."""
        params: list[tuple[str, str | int]] = [("limit", limit)]
        if mine:
            params.append(("mine", "true"))
        for key, value in (("state", state), ("id_prefix", id_prefix), ("cursor", cursor)):
            if value is not None:
                params.append((key, value))
        return self._document(WorkflowList, "GET", "/workflows", params=params)

    def get_workflow(self, workflow_id: str) -> WorkflowOut:
        """GET /workflows/{id}: the workflow with each step instance and its job."""
        return self._document(WorkflowOut, "GET", f"/workflows/{segment(workflow_id)}")

    def wait_workflow(self, workflow_id: str, *, poll_seconds: float = 1.0,
                      timeout: float | None = None,
                      on_update: Callable[[WorkflowOut], None] | None = None) -> WorkflowOut:
        """Wait until the workflow has ended (completed, failed or cancelled) or `timeout`
        seconds pass; returns the last view. Follows the event stream of its jobs; polls
        every `poll_seconds` against a gateway without one."""
        deadline = None if timeout is None else time.monotonic() + timeout
        return workflow_waits.wait_for_workflow(self, workflow_id, deadline, on_update,
                                                poll_seconds)

    def cancel_workflow(self, workflow_id: str) -> WorkflowOut:
        """POST /workflows/{id}/cancel (202): every unfinished step is cancelled."""
        return self._document(WorkflowOut, "POST",
                              f"/workflows/{segment(workflow_id)}/cancel")

    def workflow_events(self, workflow_id: str) -> list[WorkflowEventOut]:
        """GET /workflows/{id}/events, every page: what happened, oldest first."""
        return self._every_page(WorkflowEventList,
                                f"/workflows/{segment(workflow_id)}/events")

    def workflow_schema(self) -> dict[str, Any]:
        """GET /workflows/schema: the JSON Schema of a workflow spec."""
        return cast(dict[str, Any], self._json("GET", "/workflows/schema", auth=None))

    def resolve_workflow_id(self, text: str) -> str:
        """The id of your workflow `text` names: a whole id or a unique start of one.
        NotFoundError when none does or several do (they are listed)."""
        wanted = text.strip().lower()
        if is_job_id(wanted):
            return wanted
        if not JOB_ID_PREFIX.matches(wanted):
            raise _not_found(f"No workflow of yours has an id starting with '{text}' "
                             f"({JOB_ID_PREFIX.hint}).")
        found = self.list_workflows(id_prefix=wanted, mine=True,
                                    limit=MAX_ID_CANDIDATES + 1)["items"]
        if len(found) == 1:
            return found[0]["id"]
        if not found:
            raise _not_found(f"No workflow of yours has an id starting with '{text}'.")
        listed = ", ".join(w["id"] for w in found[:MAX_ID_CANDIDATES])
        raise _not_found(f"'{text}' starts the ids of several workflows ({listed}): give "
                         "more of the id.")


def _not_found(detail: str) -> NotFoundError:
    error = problem_error(404, {"title": "Not found", "detail": detail})
    assert isinstance(error, NotFoundError)
    return error
