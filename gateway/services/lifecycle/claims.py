"""Claims: a worker takes a job at a site under a lease (a new SUBMITTING attempt), takes
over an attempt whose worker let the lease run out, and renews its lease while it works.

An attempt stays SUBMITTING, under the lease, until the site's job id is committed
(gateway.services.lifecycle.submit_records): a worker that dies in between is replaced
after the lease, and the replacement adopts the job by its tag before it would submit
again (gateway.worker.submission.submit).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import ValidationError
from sqlalchemy.orm import Session

from gateway.db.base import utcnow
from gateway.db.models import Attempt
from gateway.domain.jobspec import JobSpec
from gateway.domain.states import AttemptState, JobState, Reason
from gateway.repositories import sites as site_rows
from gateway.repositories.jobs import attempts, targets
from gateway.repositories.jobs import native_arrays as native_repo
from gateway.repositories.jobs import rows as jobs
from gateway.services.lifecycle.holder import LeaseHolder
from gateway.services.lifecycle.transitions import advance, new_attempt, note
from gateway.services.sites.entry import SiteEntry


@dataclass(frozen=True)
class Claim:
    """An attempt this worker holds the lease on and must get submitted."""

    attempt_id: int
    job_id: str
    tag: str
    workdir: str
    spec: JobSpec
    recovering: bool
    owner: str | None  # the owner's gateway username: picks the account on mapped sites
    owner_id: str
    array_index: int | None = None  # a task of a job array: its index (its environment)


def claim_accepted(session: Session, holder: LeaseHolder, site: SiteEntry,
                   limit: int) -> list[Claim]:
    """Claim up to `limit` ACCEPTED jobs placed at the site, then jobs with an open
    target there (a hedge or failover sibling), within the site's free slots: each
    gets a new SUBMITTING attempt under the holder's lease and the job moves to
    STAGING_IN (a sibling's job may be further on already). A stored spec today's
    rules refuse fails the job, saying why."""
    now = utcnow()
    actor = holder.actor
    admission = site_rows.lock_admission(session, site.name)
    if admission is None or not admission.accepting:
        return []
    free = min(site.max_jobs - attempts.count_live(session, site.name), limit)
    if free <= 0:
        return []
    found = jobs.lock_accepted(session, [site.name], free)
    hedged = targets.lock_open(session, site.name, free - len(found)) \
        if len(found) < free else []
    if not found and not hedged:
        return []
    # One query and one flush for the whole batch, not one of each per job.
    last = attempts.last_numbers(session, [f.job.id for f in (*found, *hedged)])
    made = []
    for owned, sibling in [(o, False) for o in found] + [(o, True) for o in hedged]:
        job = owned.job
        try:
            spec = jobs.stored_spec(job.spec, submitting=True)
        except ValidationError as exc:
            # Accepted under older, looser rules and never submitted: refused now,
            # saying why, instead of failing this claim on every pass.
            problem = "; ".join(str(e["msg"]) for e in exc.errors()[:3])
            advance(session, job, JobState.FAILED, actor=actor,
                    reason=f"{Reason.SUBMIT_REJECTED}: the job spec is no longer "
                           f"accepted: {problem}")
            continue
        number = 1 + last.get(job.id, 0)
        last[job.id] = number
        tag = f"gw-{job.id}" if number == 1 else f"gw-{job.id}.{number}"
        attempt = Attempt(job_id=job.id, number=number, site_name=site.name, tag=tag,
                          workdir=site.workdir(tag),
                          lease_until=now + holder.lease, lease_owner=holder.worker_id,
                          created_at=now)
        new_attempt(session, attempt, actor=actor)
        reason = (f"staging {len(spec.inputs)} input(s) to site '{site.name}'"
                  if spec.inputs else f"preparing job directory at site '{site.name}'")
        if sibling:
            targets.mark_claimed(session, job.id, site.name, now)
            if not advance(session, job, JobState.STAGING_IN, actor=actor, reason=reason):
                note(session, job, f"also {reason} (first to start wins)", actor=actor)
        else:
            advance(session, job, JobState.STAGING_IN, actor=actor, reason=reason)
        made.append((attempt, spec, owned))
    session.flush()
    return [Claim(attempt.id, attempt.job_id, attempt.tag, attempt.workdir, spec,
                  recovering=False, owner=owned.owner, owner_id=owned.owner_id,
                  array_index=owned.job.array_index)
            for attempt, spec, owned in made]


def recover(session: Session, holder: LeaseHolder, site: SiteEntry,
            limit: int) -> list[Claim]:
    """Take over SUBMITTING attempts whose worker let the lease run out."""
    now = utcnow()
    # A native array's tasks are recovered together (gateway.services.lifecycle.native_arrays).
    leased = attempts.lease_stale(session, site.name, [AttemptState.SUBMITTING], None,
                                  now, holder.worker_id, now + holder.lease, limit,
                                  where=~native_repo.is_native_attempt())
    return [Claim(a.attempt.id, a.attempt.job_id, a.attempt.tag, a.attempt.workdir,
                  jobs.stored_spec(a.spec), recovering=True,
                  owner=a.owner, owner_id=a.owner_id, array_index=a.array_index)
            for a in leased]


def renew(session: Session, holder: LeaseHolder, attempt_id: int) -> bool:
    """Extend the holder's lease for another staging lease; False when lost."""
    return attempts.renew_lease(session, attempt_id, holder.worker_id,
                                utcnow() + holder.staging_lease)
