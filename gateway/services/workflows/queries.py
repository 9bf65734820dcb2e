"""Reads of workflows for the API: a page of them, one with its step instances, its
events. A workflow someone may not see is not found (404), exactly like one that does
not exist: ids are not an oracle. Auditors and administrators read every workflow."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from gateway.domain.errors import NotFound
from gateway.domain.principal import Principal
from gateway.repositories import workflows as repo
from gateway.repositories.workflows import StepView
from gateway.services import cursors
from gateway.services.jobs.arrays import check_prefix, moment
from gateway.services.jobs.queries import sees_all


@dataclass(frozen=True)
class WorkflowDetail:
    """A workflow's row (with `owner_name`) and its instances in plan order."""

    row: dict[str, Any]
    steps: list[StepView]


def _owner(principal: Principal) -> str | None:
    return None if sees_all(principal) else principal.user_id


def _check_id(workflow_id: str) -> None:
    try:
        uuid.UUID(workflow_id)
    except ValueError:
        raise NotFound(f"No workflow with id '{workflow_id}'.") from None


def visible(conn: Connection, principal: Principal, workflow_id: str) -> dict[str, Any]:
    """The workflow's row, or NotFound when it does not exist or is not the caller's."""
    _check_id(workflow_id)
    row = repo.get(conn, workflow_id, _owner(principal))
    if row is None:
        raise NotFound(f"No workflow with id '{workflow_id}'. List yours with "
                       "'gridgate workflow list'.")
    return row


def detail(conn: Connection, principal: Principal, workflow_id: str) -> WorkflowDetail:
    """The workflow with each instance and the state of its job."""
    row = visible(conn, principal, workflow_id)
    return WorkflowDetail(row, repo.steps(conn, workflow_id))


def list_workflows(conn: Connection, principal: Principal, state: str | None, mine: bool,
                   id_prefix: str | None, *, limit: int, cursor: str | None
                   ) -> tuple[cursors.Page[dict[str, Any]], dict[str, dict[str, int]]]:
    """A page of the caller's workflows, newest first, and how many instances of each are
    in each state."""
    after = None
    if cursor:
        created, workflow_id = cursors.decode(cursor, (str, str))
        after = (moment(str(created)), str(workflow_id))
    check_prefix(id_prefix)
    owner = principal.user_id if mine else _owner(principal)
    rows = repo.page(conn, owner, state, id_prefix, limit=limit + 1, after=after)
    found = cursors.page(rows, limit, lambda r: (r["created_at"].isoformat(), r["id"]))
    return found, repo.step_counts(conn, [r["id"] for r in found.rows])


def events(conn: Connection, principal: Principal, workflow_id: str, *, limit: int,
           cursor: str | None) -> cursors.Page[dict[str, Any]]:
    """A page of the workflow's events, oldest first."""
    visible(conn, principal, workflow_id)
    after = int(cursors.decode(cursor, (int,))[0]) if cursor else None
    rows = repo.events(conn, workflow_id, limit=limit + 1, after=after)
    return cursors.page(rows, limit, lambda r: (r["id"],))
