"""The attempt lifecycle: leases and every state change a worker makes.

Each method works inside the caller's unit of work (one per worker step) and flushes
at most; the step commits. Rows are always locked attempts before jobs, in id order,
so concurrent workers never deadlock.

Crash safety rests on two rules kept here: an attempt stays SUBMITTING, under a lease,
until the site's job id is committed (a worker that dies in between is replaced after
the lease, and the replacement adopts the job by its tag before it would submit
again); and only the worker holding a lease records the outcome of the work it covers
(submission, stage-in, stage-out), so a late worker's result is discarded.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import ValidationError
from sqlalchemy.orm import Session

from adapters.base import JobStatus, NativeState
from adapters.reasons import because
from gateway.db.base import utcnow
from gateway.db.models import Attempt, Job
from gateway.domain.jobspec import JobSpec
from gateway.domain.states import AttemptState, JobState, Reason
from gateway.metrics import Metrics
from gateway.repositories import sites as site_rows
from gateway.repositories.jobs import attempts, targets
from gateway.repositories.jobs import native_arrays as native_repo
from gateway.repositories.jobs import rows as jobs
from gateway.repositories.jobs.attempts import Followed, PendingCancel
from gateway.repositories.jobs.rows import NewOutput
from gateway.services import hedging
from gateway.services.sites.entry import SiteEntry
from gateway.services.transitions import advance, note

log = logging.getLogger(__name__)

__all__ = ["Claim", "Lifecycle", "NewOutput", "StageOutClaim", "Submitted"]

_FINAL_TARGET = {
    NativeState.COMPLETED: JobState.COMPLETED,
    NativeState.FAILED: JobState.FAILED,
    NativeState.CANCELLED: JobState.CANCELLED,
}


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


@dataclass(frozen=True)
class StageOutClaim:
    """A finished run whose outputs this worker holds the lease to collect."""

    attempt_id: int
    job_id: str
    workdir: str
    spec: JobSpec
    owner: str | None
    owner_id: str
    exit_code: int | None = None


@dataclass(frozen=True)
class Submitted:
    """A claim the site took, with its job id and how its inputs were staged."""

    claim: Claim
    native_id: str
    staged: str | None = None  # a summary of the stage-in, for the event


class Lifecycle:
    """Leases and transitions of one worker (its id names it as lease owner and actor)."""

    def __init__(self, worker_id: str, lease: timedelta, staging_lease: timedelta,
                 metrics: Metrics) -> None:
        self.worker_id = worker_id
        self.actor = f"worker {worker_id}"
        self.lease = lease
        self.staging_lease = staging_lease
        self.metrics = metrics

    # --- claims and leases --------------------------------------------------------------

    def claim_accepted(self, session: Session, site: SiteEntry, limit: int) -> list[Claim]:
        """Claim up to `limit` ACCEPTED jobs placed at the site, then jobs with an open
        target there (a hedge or failover sibling), within the site's free slots: each
        gets a new SUBMITTING attempt under this worker's lease and the job moves to
        STAGING_IN (a sibling's job may be further on already). A stored spec today's
        rules refuse fails the job, saying why."""
        now = utcnow()
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
                advance(session, job, JobState.FAILED, actor=self.actor,
                        reason=f"{Reason.SUBMIT_REJECTED}: the job spec is no longer "
                               f"accepted: {problem}")
                continue
            number = 1 + last.get(job.id, 0)
            last[job.id] = number
            tag = f"gw-{job.id}" if number == 1 else f"gw-{job.id}.{number}"
            attempt = Attempt(job_id=job.id, number=number, site_name=site.name, tag=tag,
                              state=AttemptState.SUBMITTING, workdir=site.workdir(tag),
                              lease_until=now + self.lease, lease_owner=self.worker_id,
                              created_at=now)
            attempts.add(session, attempt)
            reason = (f"staging {len(spec.inputs)} input(s) to site '{site.name}'"
                      if spec.inputs else f"preparing job directory at site '{site.name}'")
            if sibling:
                targets.mark_claimed(session, job.id, site.name, now)
                if not advance(session, job, JobState.STAGING_IN, actor=self.actor,
                               reason=reason):
                    note(session, job, f"also {reason} (first to start wins)",
                         actor=self.actor)
            else:
                advance(session, job, JobState.STAGING_IN, actor=self.actor, reason=reason)
            made.append((attempt, spec, owned))
        session.flush()
        return [Claim(attempt.id, attempt.job_id, attempt.tag, attempt.workdir, spec,
                      recovering=False, owner=owned.owner, owner_id=owned.owner_id,
                      array_index=owned.job.array_index)
                for attempt, spec, owned in made]

    def recover(self, session: Session, site: SiteEntry, limit: int) -> list[Claim]:
        """Take over SUBMITTING attempts whose worker let the lease run out."""
        now = utcnow()
        # A native array's tasks are recovered together (gateway.services.native_arrays).
        leased = attempts.lease_stale(session, site.name, [AttemptState.SUBMITTING], None,
                                      now, self.worker_id, now + self.lease, limit,
                                      where=~native_repo.is_native_attempt())
        return [Claim(a.attempt.id, a.attempt.job_id, a.attempt.tag, a.attempt.workdir,
                      jobs.stored_spec(a.spec), recovering=True,
                      owner=a.owner, owner_id=a.owner_id, array_index=a.array_index)
                for a in leased]

    def renew(self, session: Session, attempt_id: int) -> bool:
        """Extend this worker's lease for another staging lease; False when lost."""
        return attempts.renew_lease(session, attempt_id, self.worker_id,
                                    utcnow() + self.staging_lease)

    # --- submission ---------------------------------------------------------------------

    def record_submitted(self, session: Session, site_name: str,
                         placed: Sequence[Submitted]) -> None:
        """The site's job ids, and the jobs QUEUED, in the caller's one unit of work."""
        now = utcnow()
        locked = attempts.lock_many(session, [p.claim.attempt_id for p in placed])
        found = jobs.lock_many(session, [p.claim.job_id for p in placed])
        for item in placed:
            attempt = locked[item.claim.attempt_id]
            if attempt.state is not AttemptState.SUBMITTING:
                continue  # another worker recovered and recorded it meanwhile
            attempt.native_id = item.native_id
            attempt.state = AttemptState.QUEUED
            attempt.submitted_at = now
            attempt.lease_until = None
            reason = f"submitted to site '{site_name}' as job {item.native_id}"
            if item.staged is not None:
                reason += f" ({item.staged})"
            if advance(session, found[item.claim.job_id], JobState.QUEUED, actor=self.actor,
                       at=now, reason=reason):
                self.metrics.transitions.labels(JobState.QUEUED.value).inc()
        session.flush()

    def record_rejection(self, session: Session, claim: Claim, reason: str) -> None:
        """The claim cannot run (refused by the site, unstageable): attempt and job FAILED."""
        attempt = attempts.lock(session, claim.attempt_id)
        assert attempt is not None
        if attempt.state is not AttemptState.SUBMITTING:
            return
        self._end(attempt, AttemptState.FAILED, reason)
        job = jobs.lock(session, claim.job_id)
        assert job is not None
        if hedging.siblings_remain(session, job, attempt):
            note(session, job, f"site '{attempt.site_name}' could not take it: {reason}",
                 actor=self.actor)
        else:
            advance(session, job, JobState.FAILED, actor=self.actor, reason=reason)
        session.flush()

    def cancel_before_submit(self, session: Session, claim: Claim) -> bool:
        """End the claim if its cancel came while it was staging in (nothing reached the
        scheduler), CANCELLED, or REVOKED if a sibling started first, while this worker
        still holds it. True when it was ended."""
        attempt = attempts.lock(session, claim.attempt_id)
        job = jobs.lock(session, claim.job_id)
        assert attempt is not None and job is not None
        if attempt.state is not AttemptState.SUBMITTING \
                or attempt.lease_owner != self.worker_id:
            return False
        if job.winner_attempt_id is not None and not job.cancel_requested:
            self._end(attempt, AttemptState.REVOKED, f"revoked before submission: the job "
                      f"started first at site '{job.site_name}'")
            session.flush()
            return True
        if not job.cancel_requested:
            return False
        self._end(attempt, AttemptState.CANCELLED, Reason.CANCELLED_BY_USER)
        advance(session, job, JobState.CANCELLED, actor=self.actor,
                reason=f"{Reason.CANCELLED_BY_USER} while staging in; not submitted")
        session.flush()
        return True

    # --- cancels ------------------------------------------------------------------------

    @staticmethod
    def stop_requested(session: Session, job_id: str, attempt_id: int) -> bool:
        """Whether the job's owner asked to cancel it (the one record of a cancel), or a
        sibling of this attempt started first."""
        return jobs.stop_requested(session, job_id, attempt_id)

    @staticmethod
    def pending_cancels(session: Session, site_name: str) -> list[PendingCancel]:
        """Cancels to send to the site: asked for, not sent yet, the job at the site."""
        return attempts.pending_cancels(session, site_name)

    @staticmethod
    def cancel_sent(session: Session, attempt_id: int) -> None:
        """The site was asked to cancel (or did not know the job): do not ask again."""
        attempts.mark_cancel_sent(session, attempt_id, utcnow())
        session.flush()

    @staticmethod
    def followed(session: Session, site_name: str) -> list[Followed]:
        """The site's attempts the scheduler has, for one status call."""
        return attempts.followed(session, site_name)

    @staticmethod
    def _end(attempt: Attempt, state: AttemptState, reason: str) -> None:
        attempt.state = state
        attempt.reason = reason
        attempt.lease_until = None
        attempt.ended_at = utcnow()

    # --- status -------------------------------------------------------------------------

    def apply_statuses(self, session: Session, changed: Sequence[tuple[int, JobStatus]]
                       ) -> None:
        """Record what the scheduler said about these attempts (only changes are passed)."""
        locked = attempts.lock_many(session, [i for i, _ in changed])
        found = jobs.lock_many(session, {a.job_id for a in locked.values()})
        for attempt_id, status in changed:
            attempt = locked[attempt_id]
            self._apply(session, found[attempt.job_id], attempt, status)
        session.flush()

    def _apply(self, session: Session, job: Job, attempt: Attempt, status: JobStatus) -> None:
        if attempt.state.is_final:
            return
        attempt.raw_state = status.raw_state
        if status.started_at and attempt.started_at is None:
            attempt.started_at = status.started_at
        lost = job.winner_attempt_id is not None and job.winner_attempt_id != attempt.id
        if lost:
            hedging.apply_lost(session, job, attempt, status, self.actor,
                                self.metrics)
            return
        job.raw_state = status.raw_state
        if status.state is NativeState.UNKNOWN:
            log.warning("job %s: unknown scheduler state %r", job.id, status.raw_state)
            return
        if status.state is NativeState.QUEUED:
            attempt.reason = status.reason
            return
        if status.state is NativeState.RUNNING:
            attempt.state = AttemptState.RUNNING
            if job.winner_attempt_id is None:
                hedging.win(session, job, attempt, self.actor)
            self._advance(session, job, JobState.RUNNING, raw_state=status.raw_state,
                          at=status.started_at, reason=status.reason)
            return
        if status.state is not NativeState.COMPLETED and attempt.started_at is None \
                and job.winner_attempt_id is None \
                and hedging.siblings_remain(session, job, attempt):
            # Ended before it ever ran, and a sibling may still: not the job's end.
            self._end(attempt, AttemptState.of(_FINAL_TARGET[status.state]),
                      status.reason or status.raw_state or "ended")
            attempt.ended_at = status.ended_at or attempt.ended_at
            note(session, job, f"site '{attempt.site_name}' dropped it "
                 f"({attempt.reason}); waiting for the other site(s)", actor=self.actor)
            return
        if job.winner_attempt_id is None:
            hedging.win(session, job, attempt, self.actor)  # it ran (too fast to be seen RUNNING)
        if job.started_at is None:
            # Never seen RUNNING (it ended between two status calls): the site knows when
            # it started, and `show` should say so.
            job.started_at = attempt.started_at
        target = _FINAL_TARGET[status.state]
        attempt.state = AttemptState.of(target)
        attempt.exit_code = status.exit_code
        attempt.reason = status.reason
        attempt.ended_at = status.ended_at or utcnow()
        job.exit_code = status.exit_code
        reason = status.reason
        if target is JobState.CANCELLED and job.cancel_requested:
            reason = Reason.CANCELLED_BY_USER
        elif reason is None and status.exit_code:
            reason = because(Reason.EXIT_CODE, status.exit_code, " ")
        # One key read as stored, not through jobs.stored_spec: this unit of work applies
        # the statuses of all the site's jobs, which one spec a rule tightened since
        # must not block.
        if target is not JobState.CANCELLED and job.spec.get("outputs"):
            # Collect the outputs first (a failed run's too); stage-out finishes the job.
            attempt.lease_until = attempt.lease_owner = None
            self._advance(session, job, JobState.STAGING_OUT, raw_state=status.raw_state,
                          at=attempt.ended_at,
                          reason=f"run ended {target.value}"
                          + (f" ({reason})" if reason else "") + "; collecting outputs")
            return
        self._advance(session, job, target, raw_state=status.raw_state, at=attempt.ended_at,
                      reason=reason)

    def _advance(self, session: Session, job: Job, target: JobState, *,
                 raw_state: str | None = None, at: datetime | None = None,
                 reason: str | None = None) -> None:
        if advance(session, job, target, actor=self.actor, raw_state=raw_state, at=at,
                   reason=reason):
            self.metrics.transitions.labels(target.value).inc()

    # --- stage-out ----------------------------------------------------------------------

    def claim_stage_outs(self, session: Session, site_name: str, limit: int
                         ) -> list[StageOutClaim]:
        """Take the lease on runs that ended and whose outputs nobody is collecting."""
        now = utcnow()
        leased = attempts.lease_stale(
            session, site_name, [AttemptState.COMPLETED, AttemptState.FAILED],
            JobState.STAGING_OUT, now, self.worker_id, now + self.staging_lease, limit)
        return [StageOutClaim(a.attempt.id, a.attempt.job_id, a.attempt.workdir,
                              jobs.stored_spec(a.spec), a.owner, a.owner_id,
                              a.attempt.exit_code)
                for a in leased]

    def finish_stage_out(self, session: Session, site_name: str, claim: StageOutClaim,
                         outputs: Sequence[NewOutput], note: str | None,
                         failure: str | None) -> None:
        """Record the collected outputs and end the job, if this worker still holds the
        lease (otherwise another worker took over and finishes it)."""
        attempt = attempts.lock(session, claim.attempt_id)
        assert attempt is not None
        if attempt.lease_owner != self.worker_id or attempt.lease_until is None:
            return
        job = jobs.lock(session, claim.job_id)
        assert job is not None
        attempt.lease_until = attempt.lease_owner = None
        run_reason = attempt.reason or (
            because(Reason.EXIT_CODE, attempt.exit_code, " ") if attempt.exit_code else None)
        jobs.replace_outputs(session, claim.job_id, site_name, outputs, utcnow())
        if failure is not None:
            target = JobState.FAILED
            note = f"{Reason.STAGE_OUT_FAILED}: {failure}"
        else:
            target = JobState(attempt.state.value)
        reason = f"{run_reason}; {note}" if run_reason else note
        self._advance(session, job, target, reason=reason)
        session.flush()


def record_site_state(session: Session, site_name: str, state: str,
                      reason: str | None) -> None:
    """Record a site's health (up, or down and why) as the worker saw it."""
    site_rows.set_state(session, site_name, state, reason)
