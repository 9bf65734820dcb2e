"""Jobs: the job rows, their labels, outputs and Idempotency-Keys, and the project a
submission is charged to. The submit path uses Core statements: it is the hottest
write, and the ORM's bookkeeping costs more there than the statements themselves."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Connection,
    Table,
    and_,
    bindparam,
    delete,
    insert,
    or_,
    select,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gateway.db.models import (
    Event,
    IdempotencyKey,
    Job,
    JobLabel,
    JobOutput,
    Membership,
    Project,
    User,
)
from gateway.domain.jobspec import AUTO, SUBMITTED, JobSpec, Resources
from gateway.domain.states import JobState
from gateway.repositories import bulk
from gateway.repositories.jobs import events
from gateway.repositories.jobs.events import NewEvent
from gateway.repositories.jobs.queries import JobRecord


@dataclass(frozen=True)
class ProjectRef:
    id: int
    name: str


@dataclass(frozen=True)
class NewJob:
    """A job as accepted, with its first event, its labels and (maybe) its key."""

    id: str
    owner_id: str
    project_id: int
    name: str
    spec: Mapping[str, Any]
    site_name: str | None  # None: a `site: auto` job, placed by a routing pass
    created_at: datetime
    labels: Mapping[str, str]
    first_event: NewEvent
    idempotency_key: str | None = None
    request_hash: str = ""
    reason: str | None = None
    gate: str | None = None  # gateway.domain.job_relations.Gate
    array_job_id: str | None = None
    array_index: int | None = None
    origin: str | None = None  # gateway.domain.job_origin.JobOrigin.stored

    def row(self) -> JobRecord:
        """The jobs row, every column given (one shape for the Core insert)."""
        return {
            "id": self.id, "owner_id": self.owner_id, "project_id": self.project_id,
            "name": self.name, "spec": dict(self.spec), "state": JobState.ACCEPTED.value,
            "reason": self.reason, "raw_state": None, "site_name": self.site_name,
            "exit_code": None, "cancel_requested": False, "held": False,
            "gate": self.gate, "array_job_id": self.array_job_id,
            "array_index": self.array_index, "origin": self.origin,
            "created_at": self.created_at,
            "updated_at": self.created_at, "started_at": None, "ended_at": None,
        }


@dataclass(frozen=True)
class KeyedJob:
    """The job an Idempotency-Key created, and the digest of the body that created it."""

    job_id: str
    request_hash: str


@dataclass(frozen=True)
class OwnedJob:
    """A job locked for an update, with its owner's username and id."""

    job: Job
    owner: str | None
    owner_id: str


@dataclass(frozen=True)
class NewOutput:
    """A collected output file, as recorded."""

    path: str
    size: int
    sha256: str
    location: str
    site_path: str


def stored_spec(spec: Mapping[str, Any], *, submitting: bool = False) -> JobSpec:
    """The typed spec of a stored job (its row's `spec`: the dump validated at submit).

    The spec was valid when the job was accepted, so the checks that guard submission
    and staging in (script directives, environment names, job paths), which may have
    tightened since, are not applied again (`jobspec.SUBMITTED`): a job accepted, routed
    or run under older rules can still be routed, failed over, recovered, collected and
    retried. `submitting`: the job is about to be staged in and sent to its site for the
    first time (a claim), so every rule of today applies, and the ValidationError says
    why it can no longer be sent (the caller fails it, saying so, once)."""
    return JobSpec.model_validate(spec, context=None if submitting else SUBMITTED)


def stored_resources(spec: Mapping[str, Any]) -> Resources:
    """The typed `resources` of a stored job's spec, alone (the spec's defaults where it
    gave none): what the charge and the forecast read (with
    gateway.accounting.requested). They read hundreds (a settlement batch) to thousands
    (a routing pass's histories) of specs at once, where the whole spec would cost a few
    times what decoding the rows does; and no rule of another section, tightened since,
    may keep a finished job from being charged or a routing pass from running."""
    return Resources.model_validate(spec.get("resources", {}))


_projects, _members = Project.__table__, Membership.__table__
_PERSONAL_PROJECT = select(_projects.c.id, _projects.c.name).where(
    _projects.c.personal_owner_id == bindparam("user_id"))
_MEMBER_PROJECT = (
    select(_projects.c.id, _projects.c.name)
    .join(_members, _members.c.project_id == _projects.c.id)
    .where(_projects.c.name == bindparam("name"), _members.c.user_id == bindparam("user_id"))
)


def personal_project(conn: Connection, user_id: str) -> ProjectRef | None:
    """The user's personal project, if they have one."""
    row = conn.execute(_PERSONAL_PROJECT, {"user_id": user_id}).first()
    return None if row is None else ProjectRef(row.id, row.name)


def member_project(conn: Connection, user_id: str, name: str) -> ProjectRef | None:
    """The project named `name`, if the user is a member of it."""
    row = conn.execute(_MEMBER_PROJECT, {"name": name, "user_id": user_id}).first()
    return None if row is None else ProjectRef(row.id, row.name)


def insert_new(session: Session, job: NewJob, first_event: bool = True) -> bool:
    """Insert the job, its first event (unless the caller writes it: `first_event`
    False), labels and key. False (nothing written) when a concurrent request already
    took the same Idempotency-Key."""
    labels = [{"job_id": job.id, "key": k, "value": v} for k, v in job.labels.items()]
    conn = session.connection()
    try:
        # A savepoint only when a concurrent twin request could collide on the key (the
        # session's: rolling it back drops the first event's audit link too).
        with session.begin_nested() if job.idempotency_key else nullcontext():
            conn.execute(insert(Job), [job.row()])
            if first_event:
                events.insert_now(session, job.first_event)
            if labels:
                conn.execute(insert(JobLabel), labels)
            if job.idempotency_key:
                conn.execute(insert(IdempotencyKey), [{
                    "owner_id": job.owner_id, "key": job.idempotency_key,
                    "request_hash": job.request_hash, "job_id": job.id,
                    "created_at": job.created_at}])
    except IntegrityError:
        if not job.idempotency_key:
            raise
        return False
    return True


def insert_many(session: Session, new_jobs: Sequence[NewJob]) -> None:
    """Insert jobs without an Idempotency-Key (the tasks of an array after its first),
    each with its first event and labels, a few statements for all of them."""
    if not new_jobs:
        return
    conn = session.connection()
    # An executemany (batched by SQLAlchemy): COPY would not adapt the JSON spec.
    conn.execute(insert(Job), [job.row() for job in new_jobs])
    bulk.insert_rows(conn, cast(Table, Event.__table__),
                     [job.first_event.row() for job in new_jobs])
    for job in new_jobs:
        job.first_event.log(session)
    bulk.insert_rows(conn, cast(Table, JobLabel.__table__), [
        {"job_id": job.id, "key": k, "value": v} for job in new_jobs
        for k, v in job.labels.items()])


def keyed_job(session: Session, owner_id: str, key: str) -> KeyedJob | None:
    """What this owner's Idempotency-Key created, if it was used."""
    row = session.get(IdempotencyKey, (owner_id, key))
    return None if row is None else KeyedJob(row.job_id, row.request_hash)


def lock(session: Session, job_id: str) -> Job | None:
    """The job, its row locked until the unit of work ends."""
    return session.get(Job, job_id, with_for_update=True)


def lock_many(session: Session, job_ids: Collection[str]) -> dict[str, Job]:
    """The jobs, locked in id order (attempts before jobs, everywhere: no deadlocks)."""
    return {j.id: j for j in session.scalars(
        select(Job).where(Job.id.in_(job_ids)).order_by(Job.id).with_for_update())}


def lock_accepted(session: Session, site_names: Collection[str], limit: int
                  ) -> list[OwnedJob]:
    """Up to `limit` ACCEPTED jobs placed at any of these sites, neither held nor gated
    (gateway.domain.job_relations.Gate), oldest first, locked; rows other workers hold
    are skipped."""
    if not site_names:
        return []
    query = (select(Job, User.username, User.id)
             .join(User, User.id == Job.owner_id)
             .where(Job.state == JobState.ACCEPTED.value, Job.site_name.in_(site_names),
                    Job.held.is_(False), Job.gate.is_(None)))
    rows = session.execute(
        query.order_by(Job.created_at, Job.id).limit(limit)
        .with_for_update(of=Job, skip_locked=True)).all()
    return [OwnedJob(job, owner, owner_id) for job, owner, owner_id in rows]


def _unrouted(closed_sites: Collection[str]) -> ColumnElement[bool]:
    waiting: ColumnElement[bool] = Job.site_name.is_(None)
    if closed_sites:
        waiting = or_(waiting, Job.site_name.in_(closed_sites))
    return and_(Job.state == JobState.ACCEPTED.value, waiting, Job.held.is_(False),
                Job.gate.is_(None), Job.spec["site"].as_string() == AUTO)


def any_unrouted(session: Session, closed_sites: Collection[str]) -> bool:
    """Whether any job waits for a routing pass (see lock_unrouted); takes no lock."""
    return session.scalar(select(Job.id).where(_unrouted(closed_sites)).limit(1)) is not None


def lock_unrouted(session: Session, closed_sites: Collection[str], limit: int
                  ) -> list[OwnedJob]:
    """Up to `limit` ACCEPTED `site: auto` jobs to route, oldest first, locked: those not
    placed yet, and those placed at one of `closed_sites` (drained or disabled since)
    and not claimed there. Rows another worker holds are skipped: it routes them."""
    rows = session.execute(
        select(Job, User.username, User.id)
        .join(User, User.id == Job.owner_id)
        .where(_unrouted(closed_sites))
        .order_by(Job.created_at, Job.id).limit(limit)
        .with_for_update(of=Job, skip_locked=True)).all()
    return [OwnedJob(job, owner, owner_id) for job, owner, owner_id in rows]


def stop_requested(session: Session, job_id: str, attempt_id: int) -> bool:
    """Whether the attempt must not go on: the job's owner asked to cancel it, or
    another attempt of the job started first (a hedge or failover sibling)."""
    row = session.execute(select(Job.cancel_requested, Job.winner_attempt_id)
                          .where(Job.id == job_id)).one_or_none()
    return row is not None and (row[0] or row[1] not in (None, attempt_id))


def owner_id(session: Session, job_id: str) -> str | None:
    return session.scalar(select(Job.owner_id).where(Job.id == job_id))


def replace_outputs(session: Session, job_id: str, site_name: str,
                    outputs: Sequence[NewOutput], now: datetime) -> None:
    """Make `outputs` the job's recorded outputs (a repeated stage-out replaces them)."""
    session.execute(delete(JobOutput).where(JobOutput.job_id == job_id))
    session.add_all(JobOutput(job_id=job_id, path=o.path, size=o.size, sha256=o.sha256,
                              location=o.location, site_name=site_name,
                              site_path=o.site_path, created_at=now) for o in outputs)
