"""Job arrays sent to a site as one native array (`sbatch --array=0-19%4`, `qsub -t`).

When every task of an array waits at one site, none was ever submitted, and the site's
scheduler can take the indices and throttle as one array (adapters.base.ArraySubmitter),
the worker claims the whole array in one unit of work: each task gets its attempt, as
it would one by one, tagged `gw-<array id>_<index>` and running in `<array dir>/<index>`,
and the throttle's gate is lifted (the scheduler keeps the throttle now). The worker
then submits ONE array job named `gw-<array id>` and records each task's own id
(`123_3`), after which each task is polled, cancelled, collected and charged as any job.

Crash safety, as for one job (gateway.worker.submission.submit): the tasks' attempts stay
SUBMITTING under the lease until the task ids are committed, all in one unit of work. A
worker that died in between is replaced after the lease; the replacement takes the lease
on every task of the array left SUBMITTING, asks the scheduler for a job named
`gw-<array id>` and adopts it, or submits the array once more if there is none: never
twice. Arrays that do not qualify keep the task-by-task path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import ValidationError
from sqlalchemy.orm import Session

from adapters.base import ArrayRequest
from adapters.batch.arrays import task_workdir
from gateway.db.base import utcnow
from gateway.db.models import Attempt
from gateway.domain.jobspec import JobSpec
from gateway.domain.states import JobState
from gateway.repositories import sites as site_rows
from gateway.repositories.jobs import attempts
from gateway.repositories.jobs import native_arrays as repo
from gateway.repositories.jobs import rows as jobs
from gateway.services.lifecycle.claims import Claim
from gateway.services.lifecycle.holder import LeaseHolder
from gateway.services.lifecycle.transitions import advance, new_attempt
from gateway.services.sites.entry import SiteEntry

# Whether the site takes this array natively: (owner's username, spec, the array).
Fits = Callable[[str | None, JobSpec, ArrayRequest], bool]


@dataclass(frozen=True)
class ArrayClaim:
    """A whole array (or, when recovering, its tasks left SUBMITTING) to submit as one."""

    array_id: str
    tag: str
    workdir: str
    spec: JobSpec
    throttle: int | None
    tasks: tuple[Claim, ...]
    recovering: bool

    @property
    def indices(self) -> tuple[int, ...]:
        """The tasks' indices, lowest first."""
        return tuple(sorted(t.array_index for t in self.tasks if t.array_index is not None))


def claim_whole_arrays(session: Session, holder: LeaseHolder, site: SiteEntry, fits: Fits,
                       limit: int) -> list[ArrayClaim]:
    """Claim, within the site's free job slots, up to `limit` arrays whose tasks all wait
    at the site and which it takes natively (see module)."""
    now = utcnow()
    waiting = repo.whole_arrays_waiting(session, site.name, limit)
    if not waiting:
        return []  # the usual case: no lock taken
    admission = site_rows.lock_admission(session, site.name)
    if admission is None or not admission.accepting:
        return []
    free = site.max_jobs - attempts.count_live(session, site.name)
    claimed = []
    for array_id in waiting:
        shape = repo.throttle_of(session, array_id)
        if shape is None or shape[0] > free:
            continue
        count, throttle = shape
        tasks = repo.lock_tasks(session, array_id, site.name)
        if len(tasks) != count:
            continue  # another worker holds some: the next cycle sees
        try:
            spec = jobs.stored_spec(tasks[0].job.spec, submitting=True)
        except ValidationError:
            continue  # the task-by-task path refuses it, saying why
        indices = tuple(t.job.array_index for t in tasks if t.job.array_index is not None)
        if len(indices) != count or not fits(tasks[0].owner, spec,
                                             ArrayRequest(indices, throttle)):
            continue
        tag = repo.native_tag_of(array_id)
        base = site.workdir(tag)
        made = []
        for owned in tasks:
            job = owned.job
            index = job.array_index
            assert index is not None
            attempt = Attempt(job_id=job.id, number=1, site_name=site.name,
                              tag=f"{tag}_{index}", workdir=task_workdir(base, index),
                              lease_until=now + holder.lease,
                              lease_owner=holder.worker_id, created_at=now)
            new_attempt(session, attempt, actor=holder.actor)
            job.gate = None  # the scheduler keeps the throttle now
            advance(session, job, JobState.STAGING_IN, actor=holder.actor,
                    reason=f"preparing job array {array_id} at site '{site.name}': "
                           f"one native array of {count} task(s)")
            made.append((attempt, owned))
        session.flush()
        free -= count
        claimed.append(ArrayClaim(
            array_id, tag, base, spec, throttle,
            tuple(Claim(a.id, a.job_id, a.tag, a.workdir, spec, recovering=False,
                        owner=o.owner, owner_id=o.owner_id, array_index=o.job.array_index)
                  for a, o in made),
            recovering=False))
    return claimed


def recover_arrays(session: Session, holder: LeaseHolder, site: SiteEntry,
                   limit: int) -> list[ArrayClaim]:
    """Take over the native arrays whose submitting worker vanished: every task of each
    left SUBMITTING, under this worker's lease (see module)."""
    now = utcnow()
    found = []
    for array_id in repo.stale_native_arrays(session, site.name, now, limit):
        leased = repo.lease_native_tasks(session, site.name, array_id, now,
                                         holder.worker_id, now + holder.lease)
        shape = repo.throttle_of(session, array_id)
        if not leased or shape is None:
            continue
        spec = jobs.stored_spec(leased[0].spec)
        tag = repo.native_tag_of(array_id)
        found.append(ArrayClaim(
            array_id, tag, site.workdir(tag), spec, shape[1],
            tuple(Claim(a.attempt.id, a.attempt.job_id, a.attempt.tag, a.attempt.workdir,
                        spec, recovering=True, owner=a.owner, owner_id=a.owner_id,
                        array_index=a.array_index) for a in leased),
            recovering=True))
    return found
