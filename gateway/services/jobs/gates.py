"""Opening the gates of ACCEPTED jobs (gateway.domain.job_relations.Gate), from the
database alone, once per worker cycle (gateway.worker.gates):

- a job waiting for its dependencies is looked at again once a job it waits for has
  ended: satisfied, it goes on (to its array's throttle, if it has one); never to be
  satisfied, it stays ACCEPTED with the reason DependencyNeverSatisfied, as in Slurm,
  and is not looked at again (finals are final) until its owner cancels it;
- the tasks of a throttled array go through, lowest index first, while fewer tasks of
  the array than its throttle are through and not ended.

Crash safety: each batch is one unit of work that locks the rows it changes (and, for a
throttle, the array's row, so two workers never count the same free places); a crash
before its commit changed nothing, and the next cycle does it again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from gateway.db.base import utcnow
from gateway.db.models import Job
from gateway.domain.job_relations import Gate, JobDependency
from gateway.repositories.jobs import relations as repo
from gateway.services.jobs import dependencies
from gateway.services.jobs.arrays import throttle_reason
from gateway.services.transitions import note
from workflows.dependencies import (
    DependencyType,
    Readiness,
    dependency_status,
    format_dependency_option,
)


@dataclass(frozen=True)
class Opened:
    """What one batch did: gates opened, and the key to resume after (None: all seen)."""

    opened: int
    after: tuple[datetime, str] | None


def anything_gated(session: Session) -> bool:
    """Whether any ACCEPTED job waits for its dependencies or its array's throttle."""
    return repo.any_gate_to_open(session)


def throttled_arrays(session: Session) -> list[str]:
    """The arrays with tasks waiting for their throttle."""
    return repo.throttled_arrays(session)


def check_dependencies(session: Session, actor: str, limit: int,
                       after: tuple[datetime, str] | None) -> Opened:
    """One batch of jobs waiting for their dependencies (see module)."""
    waiting = repo.lock_waiting(session, limit, after)
    if not waiting:
        return Opened(0, None)
    pairs = repo.dependencies_of(session, [job.id for job in waiting])
    found = dependencies.ends(session.connection(),
                              {target for deps in pairs.values() for target, _ in deps}, None)
    throttles = repo.throttles(session, {j.array_job_id for j in waiting if j.array_job_id})
    opened, now = 0, utcnow()
    for job in waiting:
        deps = [JobDependency(job=target, when=DependencyType(kind))
                for target, kind in sorted(pairs[job.id])]
        status = dependency_status(deps, found)
        gate, reason = dependencies.gate_of(status)
        if status.readiness is Readiness.SATISFIED:
            throttle = throttles.get(job.array_job_id or "")
            gate, reason = ((Gate.THROTTLE, throttle_reason(throttle)) if throttle
                            else (None, None))
            opened += 1
            _set(session, job, gate, reason or status.reason,
                 f"{status.reason} ({format_dependency_option(deps)})", actor, now)
        elif status.readiness is Readiness.NEVER:
            _set(session, job, gate, reason, reason or status.reason, actor, now)
        elif reason != job.reason and not job.held:
            job.reason = reason  # fewer jobs to wait for: said, without an event
    session.flush()
    last = waiting[-1]
    return Opened(opened, (last.created_at, last.id) if len(waiting) == limit else None)


def release_throttled(session: Session, array_id: str, actor: str) -> int:
    """Let the array's next tasks through its throttle, lowest index first; how many."""
    array = repo.lock_array(session, array_id)
    if array is None:  # another worker is at it
        return 0
    throttle = array.throttle or array.task_count
    room = throttle - repo.open_task_count(session, array_id)
    if room <= 0:
        return 0
    tasks = repo.lock_throttled_tasks(session, array_id, room)
    now = utcnow()
    for job in tasks:
        why = f"its array's throttle lets it start (at most {throttle} task(s) at once)"
        _set(session, job, None, why, why, actor, now)
    session.flush()
    return len(tasks)


def _set(session: Session, job: Job, gate: Gate | None, reason: str | None, event: str,
         actor: str, now: datetime) -> None:
    """The job's new gate, with its reason (a held job keeps saying who held it) and an
    event that changes no state."""
    job.gate = None if gate is None else gate.value
    if not job.held:
        job.reason = reason
    job.updated_at = now
    note(session, job, event, actor=actor, at=now)
