"""SQL for job arrays submitted to a site as one native array (gateway.services.native_arrays).

A native array's task attempts carry the tag `gw-<array id>_<index>` (the array's own
scheduler job is named `gw-<array id>`), which is how these queries tell them from the
attempts of tasks submitted one by one (`gw-<job id>`).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, and_, exists, func, literal, or_, select
from sqlalchemy.orm import Session, aliased

from gateway.db.job_relation_models import JobArray
from gateway.db.models import Attempt, Job, User
from gateway.domain.job_relations import Gate
from gateway.domain.states import AttemptState, JobState
from gateway.repositories.jobs.attempts import LeasedAttempt, lease_rows
from gateway.repositories.jobs.rows import OwnedJob


def native_tag_of(array_id: str) -> str:
    """The scheduler job name of the array's native submission."""
    return f"gw-{array_id}"


def is_native_attempt() -> ColumnElement[bool]:
    """The attempt (joined with its job) is a task of a native array submission."""
    return and_(Job.array_job_id.is_not(None),
                Attempt.tag.startswith(literal("gw-") + Job.array_job_id + literal("_")))


def _waiting(site_name: str) -> ColumnElement[bool]:
    """A task waiting to be claimed at the site (its array's throttle aside: a native
    array's scheduler keeps the throttle)."""
    return and_(Job.state == JobState.ACCEPTED.value, Job.site_name == site_name,
                Job.held.is_(False),
                or_(Job.gate.is_(None), Job.gate == Gate.THROTTLE.value))


def whole_arrays_waiting(session: Session, site_name: str, limit: int) -> list[str]:
    """Arrays, oldest first, all of whose tasks wait at the site and none of which was
    ever submitted anywhere: those can go to the site as one native array. Only arrays
    with a task waiting at the site are counted (the usual case: none, one cheap query)."""
    task = aliased(Job)
    tried = (exists().where(Attempt.job_id == task.id, task.array_job_id == JobArray.id))
    waiting = (select(func.count()).select_from(Job)
               .where(Job.array_job_id == JobArray.id, _waiting(site_name))
               .scalar_subquery())
    candidates = select(Job.array_job_id).where(_waiting(site_name),
                                                Job.array_job_id.is_not(None))
    query = (select(JobArray.id)
             .where(JobArray.id.in_(candidates), waiting == JobArray.task_count, ~tried)
             .order_by(JobArray.created_at, JobArray.id).limit(limit))
    return list(session.scalars(query))


def lock_tasks(session: Session, array_id: str, site_name: str) -> list[OwnedJob]:
    """The array's waiting tasks at the site, lowest index first, locked (rows other
    workers hold are skipped: the caller checks it got them all)."""
    rows = session.execute(
        select(Job, User.username, User.id).join(User, User.id == Job.owner_id)
        .where(Job.array_job_id == array_id, _waiting(site_name))
        .order_by(Job.array_index).with_for_update(of=Job, skip_locked=True)).all()
    return [OwnedJob(job, owner, owner_id) for job, owner, owner_id in rows]


def throttle_of(session: Session, array_id: str) -> tuple[int, int | None] | None:
    """The array's task count and throttle."""
    row = session.execute(select(JobArray.task_count, JobArray.throttle)
                          .where(JobArray.id == array_id)).first()
    return None if row is None else (row[0], row[1])


def stale_native_arrays(session: Session, site_name: str, now: datetime,
                        limit: int) -> list[str]:
    """Arrays with native task attempts at the site still SUBMITTING whose lease ran out."""
    query = (select(Job.array_job_id).join(Attempt, Attempt.job_id == Job.id)
             .where(Attempt.site_name == site_name,
                    Attempt.state == AttemptState.SUBMITTING, is_native_attempt(),
                    or_(Attempt.lease_until.is_(None), Attempt.lease_until < now))
             .group_by(Job.array_job_id).limit(limit))
    return [array_id for array_id in session.scalars(query) if array_id is not None]


def lease_native_tasks(session: Session, site_name: str, array_id: str, now: datetime,
                       owner: str, until: datetime) -> list[LeasedAttempt]:
    """Take the lease on every stale SUBMITTING native attempt of the array at the site."""
    rows = session.execute(
        select(Attempt, Job.spec, User.username, User.id, Job.array_index)
        .join(Job, Job.id == Attempt.job_id).join(User, User.id == Job.owner_id)
        .where(Attempt.site_name == site_name, Attempt.state == AttemptState.SUBMITTING,
               Job.array_job_id == array_id, is_native_attempt(),
               or_(Attempt.lease_until.is_(None), Attempt.lease_until < now))
        .order_by(Job.array_index)
        .with_for_update(of=Attempt, skip_locked=True)).all()
    return lease_rows(session, rows, owner, until)

