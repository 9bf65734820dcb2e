"""Job arrays and job dependencies: their rows, what the jobs they name have become, and
the gated jobs the worker looks at each cycle (gateway.services.jobs.gates).

Only gated jobs are read (`jobs.gate` has a partial index over them), and a job waiting
for its dependencies is looked at again only once one of the jobs it waits for has ended.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypedDict, cast

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    Table,
    and_,
    delete,
    exists,
    func,
    or_,
    select,
)
from sqlalchemy.orm import InstrumentedAttribute, Session, aliased

from gateway.db.job_relation_models import JobArray, JobDependencyRow
from gateway.db.models import Job, User
from gateway.domain.job_relations import Gate
from gateway.domain.states import FINAL_STATES, JobState
from gateway.repositories import bulk

_FINAL = sorted(s.value for s in FINAL_STATES)
_ARRAYS = cast(Table, JobArray.__table__)
_DEPENDENCIES = cast(Table, JobDependencyRow.__table__)


@dataclass(frozen=True)
class NewArray:
    """A job array as submitted."""

    id: str
    owner_id: str
    name: str
    spec: str
    task_count: int
    throttle: int | None
    created_at: datetime


def insert_array(session: Session, array: NewArray) -> None:
    """Insert the array's record (before its tasks: they refer to it)."""
    bulk.insert_rows(session.connection(), _ARRAYS, [{
        "id": array.id, "owner_id": array.owner_id, "name": array.name, "spec": array.spec,
        "task_count": array.task_count, "throttle": array.throttle,
        "created_at": array.created_at}])


def delete_array(session: Session, array_id: str) -> None:
    """Drop an array record that got no tasks (its submission lost to a twin request)."""
    session.execute(delete(JobArray).where(JobArray.id == array_id))


def insert_dependencies(session: Session, rows: Sequence[tuple[str, str, str]]) -> None:
    """Insert (job id, id of the job or array it depends on, kind) rows."""
    bulk.insert_rows(session.connection(), _DEPENDENCIES,
                     [{"job_id": j, "depends_on_id": d, "kind": k} for j, d, k in rows])


def job_states(conn: Connection, ids: Collection[str], owner_id: str | None
               ) -> dict[str, str]:
    """Job id -> state, for those of `ids` that are jobs (owned by `owner_id` unless None)."""
    if not ids:
        return {}
    query = select(Job.id, Job.state).where(Job.id.in_(list(ids)))
    if owner_id is not None:
        query = query.where(Job.owner_id == owner_id)
    return {job_id: state for job_id, state in conn.execute(query)}


def array_states(conn: Connection, ids: Collection[str], owner_id: str | None
                 ) -> dict[str, set[str]]:
    """Array id -> the states its tasks are in, for those of `ids` that are job arrays
    (owned by `owner_id` unless None)."""
    if not ids:
        return {}
    query = select(JobArray.id).where(JobArray.id.in_(list(ids)))
    if owner_id is not None:
        query = query.where(JobArray.owner_id == owner_id)
    found: dict[str, set[str]] = {array_id: set() for array_id in conn.scalars(query)}
    if found:
        rows = conn.execute(select(Job.array_job_id, Job.state).distinct()
                            .where(Job.array_job_id.in_(list(found))))
        for array_id, state in rows:
            found[str(array_id)].add(state)
    return found


def _ended(depends_on_id: ColumnElement[str] | InstrumentedAttribute[str]
           ) -> ColumnElement[bool]:
    """Whether the job or array a dependency names has ended (so the verdict may change)."""
    target = aliased(Job)
    job_ended = exists().where(target.id == depends_on_id, target.state.in_(_FINAL))
    array_ended = and_(
        exists().where(JobArray.id == depends_on_id),
        ~exists().where(target.array_job_id == depends_on_id, target.state.not_in(_FINAL)))
    return or_(job_ended, array_ended)


def lock_waiting(session: Session, limit: int, after: tuple[datetime, str] | None
                 ) -> list[Job]:
    """Up to `limit` ACCEPTED jobs waiting for their dependencies of which at least one
    has ended, oldest first from just after the (created_at, id) key `after`; locked,
    rows others hold skipped."""
    resolved = exists().where(JobDependencyRow.job_id == Job.id,
                              _ended(JobDependencyRow.depends_on_id))
    query = select(Job).where(Job.gate == Gate.DEPENDENCY.value,
                              Job.state == JobState.ACCEPTED.value, resolved)
    if after is not None:
        created, job_id = after
        query = query.where(or_(Job.created_at > created,
                                and_(Job.created_at == created, Job.id > job_id)))
    return list(session.scalars(query.order_by(Job.created_at, Job.id).limit(limit)
                                .with_for_update(of=Job, skip_locked=True)))


def dependencies_of(session: Session, job_ids: Collection[str]
                    ) -> dict[str, list[tuple[str, str]]]:
    """Job id -> its (depends_on_id, kind) pairs."""
    found: dict[str, list[tuple[str, str]]] = {job_id: [] for job_id in job_ids}
    if job_ids:
        rows = session.execute(select(JobDependencyRow.job_id, JobDependencyRow.depends_on_id,
                                      JobDependencyRow.kind)
                               .where(JobDependencyRow.job_id.in_(list(job_ids))))
        for job_id, depends_on_id, kind in rows:
            found[job_id].append((depends_on_id, kind))
    return found


def throttles(session: Session, array_ids: Collection[str]) -> dict[str, int | None]:
    """Array id -> its throttle (None: no limit)."""
    if not array_ids:
        return {}
    rows = session.execute(select(JobArray.id, JobArray.throttle)
                           .where(JobArray.id.in_(list(array_ids))))
    return {array_id: throttle for array_id, throttle in rows}


def any_gate_to_open(session: Session) -> bool:
    """Whether any ACCEPTED job waits for its dependencies or its array's throttle (one
    probe of the partial index: the usual answer is no, and then nothing is locked)."""
    return session.scalar(select(Job.id).where(
        Job.gate.in_((Gate.DEPENDENCY.value, Gate.THROTTLE.value)),
        Job.state == JobState.ACCEPTED.value).limit(1)) is not None


def throttled_arrays(session: Session) -> list[str]:
    """The arrays with tasks waiting for their throttle (any order)."""
    return list(session.scalars(select(Job.array_job_id).distinct()
                                .where(Job.gate == Gate.THROTTLE.value,
                                       Job.state == JobState.ACCEPTED.value)))


def lock_array(session: Session, array_id: str) -> JobArray | None:
    """The array, its row locked (None when another worker holds it: it is at work)."""
    return session.scalars(select(JobArray).where(JobArray.id == array_id)
                           .with_for_update(skip_locked=True)).first()


def open_task_count(session: Session, array_id: str) -> int:
    """Tasks of the array let through the throttle and not ended: the throttle counts
    them, ACCEPTED ones too (a worker may take them at any moment)."""
    return session.scalar(select(func.count()).select_from(Job).where(
        Job.array_job_id == array_id, Job.gate.is_(None),
        Job.state.not_in(_FINAL))) or 0


def lock_throttled_tasks(session: Session, array_id: str, limit: int) -> list[Job]:
    """Up to `limit` tasks of the array waiting for its throttle, lowest index first
    (held ones stay: they would take a place without running); locked, others' skipped."""
    return list(session.scalars(
        select(Job).where(Job.array_job_id == array_id, Job.gate == Gate.THROTTLE.value,
                          Job.state == JobState.ACCEPTED.value, Job.held.is_(False))
        .order_by(Job.array_index).limit(limit).with_for_update(skip_locked=True)))


def lock_unfinished_tasks(session: Session, array_id: str) -> list[Job]:
    """The array's tasks that have not ended, locked in id order (as everywhere)."""
    return list(session.scalars(
        select(Job).where(Job.array_job_id == array_id, Job.state.not_in(_FINAL))
        .order_by(Job.id).with_for_update()))


# --- the read side (the API) -----------------------------------------------------------

class ArrayView(TypedDict):
    """A job array as the API shows it: its row, its owner's name and its tasks' states."""

    id: str
    owner_id: str
    owner_name: str
    name: str
    spec: str
    task_count: int
    throttle: int | None
    created_at: datetime
    task_states: dict[str, int]


_arrays = _ARRAYS
_ARRAY_VIEW = (select(*_arrays.c, func.coalesce(User.username, User.subject)
                      .label("owner_name"))
               .join(User, User.id == _arrays.c.owner_id))


def _views(conn: Connection, query: Select[Any]) -> list[ArrayView]:
    rows = [dict(row) for row in conn.execute(query).mappings()]
    counts: dict[str, dict[str, int]] = {row["id"]: {} for row in rows}
    if counts:
        for array_id, state, count in conn.execute(
                select(Job.array_job_id, Job.state, func.count())
                .where(Job.array_job_id.in_(list(counts)))
                .group_by(Job.array_job_id, Job.state)):
            counts[str(array_id)][state] = int(count)
    return [cast(ArrayView, {**row, "task_states": counts[row["id"]]}) for row in rows]


def array_view(conn: Connection, array_id: str, owner_id: str | None) -> ArrayView | None:
    """The array (None if absent, or not owned by `owner_id` unless that is None)."""
    query = _ARRAY_VIEW.where(_arrays.c.id == array_id)
    if owner_id is not None:
        query = query.where(_arrays.c.owner_id == owner_id)
    found = _views(conn, query)
    return found[0] if found else None


def array_page(conn: Connection, owner_id: str | None, id_prefix: str | None, *, limit: int,
               after: tuple[datetime, str] | None) -> list[ArrayView]:
    """Up to `limit` arrays (owned by `owner_id` unless None; ids starting with
    `id_prefix` if given), newest first, from just after the (created_at, id) `after`."""
    arrays = _arrays.c
    query = _ARRAY_VIEW
    if owner_id is not None:
        query = query.where(arrays.owner_id == owner_id)
    if id_prefix is not None:
        query = query.where(arrays.id.startswith(id_prefix, autoescape=True))
    if after is not None:
        created, array_id = after
        query = query.where(or_(arrays.created_at < created,
                                and_(arrays.created_at == created, arrays.id < array_id)))
    return _views(conn, query.order_by(arrays.created_at.desc(), arrays.id.desc())
                  .limit(limit))
