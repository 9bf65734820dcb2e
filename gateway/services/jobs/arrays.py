"""Job arrays as Slurm users know them (`sbatch --array=0-9%2`): one record per array and
one job per task, created at submit in the submission's unit of work; each task is a
normal job with `array_job_id` and `array_index`, and runs with its index in
GRIDGATE_ARRAY_TASK_ID (gateway.domain.job_relations.task_environment).

The throttle (`%2`) bounds the tasks let through at once: at submit the lowest indices up
to it are free to go and the others wait with the reason JobArrayTaskLimit; the worker's
gate step lets the next ones through as tasks end (gateway.services.jobs.gates). Services
flush; the boundary commits.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime

from sqlalchemy import Connection
from sqlalchemy.orm import Session

from adapters.reasons import because
from gateway.domain.errors import Conflict, Forbidden, Invalid, NotFound, TooLarge
from gateway.domain.job_relations import Gate, array_of
from gateway.domain.principal import Principal
from gateway.domain.states import JobState, Reason
from gateway.repositories.jobs import relations as repo
from gateway.repositories.jobs.relations import ArrayView, NewArray
from gateway.repositories.jobs.rows import NewJob
from gateway.services import cursors
from gateway.services.jobs.queries import check_id, sees_all
from gateway.services.transitions import request_cancel
from rules.text import JOB_ID_PREFIX
from workflows.arrays import ArraySpec

MAX_ARRAY_TASKS_SETTING = "GRIDGATE_JOB_ARRAY_MAX_TASKS"


def parsed(text: str, max_tasks: int) -> ArraySpec:
    """The array `text` names, or TooLarge (413) when it has more tasks than allowed."""
    array = array_of(text)  # the syntax was checked with the job spec
    if array.count > max_tasks:
        raise TooLarge(f"The array {text!r} has {array.count} tasks, over the gateway's limit "
                       f"of {max_tasks} ({MAX_ARRAY_TASKS_SETTING}): split the work into "
                       "fewer, larger tasks, or into several arrays.", field="array",
                       limit=MAX_ARRAY_TASKS_SETTING, limit_value=max_tasks,
                       excess=array.count - max_tasks)
    return array


def throttle_reason(throttle: int) -> str:
    """Why a task waits for its array's throttle."""
    return because(Reason.JOB_ARRAY_TASK_LIMIT,
                   f"at most {throttle} task(s) of the array run at once")


def expand(first: NewJob, array: ArraySpec) -> tuple[NewArray, list[NewJob]]:
    """The array's record and its tasks, for the job `first` (the request, which becomes
    its first task)."""
    record = NewArray(str(uuid.uuid4()), first.owner_id, first.name, array.text,
                      array.count, array.throttle, first.created_at)
    return record, tasks(first, array, record)


def tasks(first: NewJob, array: ArraySpec, record: NewArray) -> list[NewJob]:
    """The array's tasks, lowest index first: `first` (whose id and key go to the first
    task) once for each index. A task waits for the throttle unless its dependencies
    gate it already or it is among the first `throttle` indices."""
    found = []
    for position, index in enumerate(array.indices):
        gate, reason = first.gate, first.reason
        why = f"task {index} of job array {record.id}: {first.first_event.reason}"
        if gate is None and array.throttle is not None and position >= array.throttle:
            gate, reason = Gate.THROTTLE.value, throttle_reason(array.throttle)
            why += f"; {reason}"
        job_id = first.id if position == 0 else str(uuid.uuid4())
        found.append(replace(
            first, id=job_id, gate=gate, reason=reason, array_job_id=record.id,
            array_index=index, first_event=replace(first.first_event, job_id=job_id,
                                                   reason=why),
            idempotency_key=first.idempotency_key if position == 0 else None))
    return found


# --- the read side, and cancelling a whole array -------------------------------------

def _owner(principal: Principal) -> str | None:
    return None if sees_all(principal) else principal.user_id


def array_detail(conn: Connection, principal: Principal, array_id: str) -> ArrayView:
    """The array with its tasks' states; NotFound for another user's (as for jobs)."""
    check_id(array_id)
    found = repo.array_view(conn, array_id, _owner(principal))
    if found is None:
        raise NotFound(f"No job array with id '{array_id}'.")
    return found


def list_arrays(conn: Connection, principal: Principal, id_prefix: str | None, mine: bool,
                *, limit: int, cursor: str | None) -> cursors.Page[ArrayView]:
    """The principal's arrays, newest first, one page at a time."""
    after = None
    if cursor:
        created, array_id = cursors.decode(cursor, (str, str))
        after = (moment(str(created)), str(array_id))
    owner = principal.user_id if mine else _owner(principal)
    rows = repo.array_page(conn, owner, id_prefix, limit=limit + 1, after=after)
    return cursors.page(rows, limit, lambda row: (row["created_at"].isoformat(), row["id"]))


def moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise cursors.refused() from None
    if moment.tzinfo is None:
        raise cursors.refused()
    return moment.astimezone(UTC)


def cancel_array(session: Session, principal: Principal, array_id: str) -> ArrayView:
    """Cancel every task of the array that has not ended, in one unit of work: those not
    taken by a worker at once, the others by asking the worker (as for one job); tasks
    collecting their outputs end on their own. Conflict when every task has ended."""
    found = array_detail(session.connection(), principal, array_id)
    if found["owner_id"] != principal.user_id and not principal.has_role("admin"):
        raise Forbidden("Only the job array's owner can cancel it.")
    unfinished = repo.lock_unfinished_tasks(session, array_id)
    if not unfinished:
        raise Conflict(f"Every task of job array {array_id} has ended; there is nothing to "
                       "cancel.")
    for job in unfinished:
        if JobState(job.state) is not JobState.STAGING_OUT:
            request_cancel(session, job, principal.display)
    session.flush()
    return array_detail(session.connection(), principal, array_id)


def check_prefix(id_prefix: str | None) -> None:
    """Invalid unless `id_prefix` can start an id (as for jobs)."""
    if id_prefix is not None and not JOB_ID_PREFIX.matches(id_prefix):
        raise Invalid(str(JOB_ID_PREFIX.problem(id_prefix)), field="id_prefix")
