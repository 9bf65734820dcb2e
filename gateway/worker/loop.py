"""The worker: submits accepted jobs, follows active ones, applies cancels.

Any number of workers may run against one PostgreSQL database. A job is claimed by
moving it out of ACCEPTED under a row lock (`FOR UPDATE SKIP LOCKED`), and its
attempt stays SUBMITTING, under a lease, until the site's job id is committed. If a
worker dies inside that window, another one recovers the attempt after the lease:
it first asks the site for a job carrying the attempt's tag and adopts it, and
submits again only if there is none. Nothing is lost, nothing runs twice.

Jobs with inputs are staged (gateway.worker.stage_in) inside the same lease, renewed
between files; a worker submits only while it still holds the lease, so a worker that
took over an expired one never races the first into a second submission. Jobs with
output globs pass through STAGING_OUT (gateway.worker.stage_out) after their run ended
COMPLETED or FAILED (a failed run's outputs help to find out why); that step is leased
the same way, and only the worker holding the lease records the outcome.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import cast

from pydantic import ValidationError
from sqlalchemy import delete, func, or_, select, update
from sqlalchemy.orm import Session

from adapters.base import Adapter, BatchSubmitter, JobStatus, NativeState
from adapters.errors import AdapterError, SubmitRejected, UnknownJob
from adapters.reasons import because
from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Attempt, Job, JobOutput, Site, User
from gateway.domain.errors import GatewayError
from gateway.domain.jobspec import SUBMITTED, JobSpec
from gateway.domain.staging import OutputsMode
from gateway.domain.states import JobState, Reason
from gateway.runtime import Runtime, build_runtime
from gateway.services.job_inputs import StagingLimits
from gateway.services.sites import NoAccount, SiteEntry
from gateway.services.transitions import advance
from gateway.services.uploads import expire_uploads, store_usage
from gateway.settings import Settings
from gateway.store import BlobStore
from gateway.worker.requests import build_submit_request
from gateway.worker.stage_in import StageInJob, StageInSummary, stage_in
from gateway.worker.stage_out import Collected, collect

log = logging.getLogger(__name__)

SUBMITTING = "SUBMITTING"
LIVE_ATTEMPT_STATES = (SUBMITTING, JobState.QUEUED.value, JobState.RUNNING.value)
CLAIM_BATCH = 50
UPLOAD_EXPIRY_SECONDS = 60.0
# Incoming files (https inputs, fetched outputs) older than this were left by a crash:
# a day is far longer than any one download takes.
INCOMING_MAX_AGE_SECONDS = 24 * 3600.0

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



class Worker:
    """One worker process's loop over every site."""

    def __init__(self, runtime: Runtime, worker_id: str | None = None) -> None:
        self.rt = runtime
        self.id = worker_id or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.actor = f"worker {self.id}"
        self._site_status: dict[str, tuple[str, str | None]] = {}
        self._next_expiry = 0.0

    @property
    def lease(self) -> timedelta:
        return timedelta(seconds=self.rt.settings.submit_lease_seconds)

    @property
    def staging_lease(self) -> timedelta:
        return timedelta(seconds=self.rt.settings.staging_lease_seconds)

    def run(self, stop: threading.Event) -> None:
        """Cycle until `stop` is set; sleep between cycles only when there was nothing to do."""
        log.info("worker %s started", self.id)
        while not stop.is_set():
            try:
                busy = self.run_once()
            except Exception:  # the loop must outlive any one bad cycle
                log.exception("worker cycle failed")
                busy = False
            if not busy:
                stop.wait(self.rt.settings.worker_poll_seconds)

    def run_once(self) -> bool:
        """One cycle over all sites. True when it submitted something (go again now)."""
        self._expire_uploads()
        busy = False
        for site in self.rt.sites:
            try:
                recovered = self._submit_claims(site, self._recover_claims(site))
                submitted = self._submit_claims(site, self._claim_accepted(site))
                busy |= recovered | submitted
                cancelled = self._send_cancels(site)
                polled = self._poll(site)
                staged_out = self._stage_outs(site)
                busy |= staged_out
                # Up only when this cycle reached the site: an idle cycle proves nothing,
                # and must not clear a final error (a changed host key) it never retried.
                if recovered or submitted or cancelled or polled or staged_out:
                    self._mark_site(site, "up", None)
            except AdapterError as exc:
                # One site's trouble never stops the cycle for the others. Final errors
                # (a changed host key, a refused login) keep the site down until fixed.
                log.log(logging.WARNING if exc.transient else logging.ERROR,
                        "site %s unavailable: %s", site.name, exc)
                self._mark_site(site, "down", exc.message)
        return busy

    def _expire_uploads(self) -> None:
        """Expire unfinished uploads idle past their time, and sweep the store's stale
        incoming files, at most once a minute."""
        now = time.monotonic()
        if now < self._next_expiry:
            return
        self._next_expiry = now + UPLOAD_EXPIRY_SECONDS
        store = BlobStore(self.rt.settings.store_dir)
        with transaction(self.rt.sessions) as session:
            expired = expire_uploads(session, store, utcnow())
        if expired:
            log.info("expired %d unfinished upload(s)", expired)
        if swept := store.sweep_incoming(INCOMING_MAX_AGE_SECONDS):
            log.info("removed %d incoming file(s) left by an interrupted fetch", swept)

    # --- submission -------------------------------------------------------------------

    def _claim_accepted(self, site: SiteEntry) -> list[Claim]:
        now = utcnow()
        with transaction(self.rt.sessions) as session:
            # Locking the site row serializes claimers per site, so max_jobs holds.
            row = session.get(Site, site.name, with_for_update=True)
            if row is None or not row.enabled or row.drained:
                return []
            live = session.scalar(select(func.count()).select_from(Attempt).where(
                Attempt.site_name == site.name, Attempt.state.in_(LIVE_ATTEMPT_STATES))) or 0
            free = min(site.max_jobs - live, CLAIM_BATCH)
            if free <= 0:
                return []
            jobs = session.execute(
                select(Job, User.username, User.id)
                .join(User, User.id == Job.owner_id)
                .where(Job.state == JobState.ACCEPTED.value, Job.site_name == site.name)
                .order_by(Job.created_at, Job.id)
                .limit(free)
                .with_for_update(of=Job, skip_locked=True)
            ).all()
            if not jobs:
                return []
            # One query and one flush for the whole batch, not one of each per job.
            last_numbers: dict[str, int] = {
                job_id: number for job_id, number in session.execute(
                    select(Attempt.job_id, func.max(Attempt.number))
                    .where(Attempt.job_id.in_([job.id for job, _, _ in jobs]))
                    .group_by(Attempt.job_id))}
            made = []
            for job, owner, owner_id in jobs:
                try:
                    spec = JobSpec.model_validate(job.spec)
                except ValidationError as exc:
                    # Accepted under older, looser rules and never submitted: refused now,
                    # saying why, instead of failing this claim on every pass.
                    problem = "; ".join(str(e["msg"]) for e in exc.errors()[:3])
                    advance(session, job, JobState.FAILED, actor=self.actor,
                            reason=f"{Reason.SUBMIT_REJECTED}: the job spec is no longer "
                                   f"accepted: {problem}")
                    continue
                number = 1 + last_numbers.get(job.id, 0)
                tag = f"gw-{job.id}" if number == 1 else f"gw-{job.id}.{number}"
                attempt = Attempt(job_id=job.id, number=number, site_name=site.name, tag=tag,
                                  state=SUBMITTING, workdir=site.workdir(tag),
                                  lease_until=now + self.lease, lease_owner=self.id,
                                  created_at=now)
                session.add(attempt)
                reason = (f"staging {len(spec.inputs)} input(s) to site '{site.name}'"
                          if spec.inputs else f"preparing job directory at site '{site.name}'")
                advance(session, job, JobState.STAGING_IN, actor=self.actor, reason=reason)
                made.append((attempt, job.id, spec, owner, owner_id))
            session.flush()
            return [Claim(attempt.id, job_id, attempt.tag, attempt.workdir, spec,
                          recovering=False, owner=owner, owner_id=owner_id)
                    for attempt, job_id, spec, owner, owner_id in made]

    def _recover_claims(self, site: SiteEntry) -> list[Claim]:
        """Attempts whose submitting worker vanished: take over their lease."""
        now = utcnow()
        with transaction(self.rt.sessions) as session:
            stale = session.execute(
                select(Attempt, Job, User.username, User.id)
                .join(Job, Job.id == Attempt.job_id)
                .join(User, User.id == Job.owner_id)
                .where(Attempt.site_name == site.name, Attempt.state == SUBMITTING,
                       Attempt.lease_until < now)
                .order_by(Attempt.id)
                .limit(CLAIM_BATCH)
                .with_for_update(of=Attempt, skip_locked=True)
            ).all()
            claims = []
            for attempt, job, owner, owner_id in stale:
                attempt.lease_until = now + self.lease
                attempt.lease_owner = self.id
                claims.append(Claim(attempt.id, job.id, attempt.tag, attempt.workdir,
                                    JobSpec.model_validate(job.spec, context=SUBMITTED),
                                    recovering=True,
                                    owner=owner, owner_id=owner_id))
            return claims

    def _submit_claims(self, site: SiteEntry, claims: Sequence[Claim]) -> bool:
        """Submit the claims, several at once: plain jobs in batches (one remote command
        each) where the site's adapter takes them, the rest one by one, a few units in
        parallel (a submission mostly waits on the site; the pooled connection carries
        one channel per command). The first error is raised once all units have finished
        (claims not recorded keep their leases and are recovered by tag)."""
        units: list[Callable[[], None]] = []
        singles: list[Claim] = []
        batches: dict[int, tuple[BatchSubmitter, list[Claim]]] = {}
        size = self.rt.settings.worker_submit_batch
        for claim in claims:
            adapter = self._batch_adapter(site, claim) if size > 1 else None
            if adapter is None:
                singles.append(claim)
            else:
                batches.setdefault(id(adapter), (adapter, []))[1].append(claim)
        for adapter, group in batches.values():
            if len(group) == 1:
                singles.extend(group)
                continue
            for at in range(0, len(group), size):
                chunk = group[at:at + size]
                units.append(partial(self._submit_batch, site, adapter, chunk))
        units.extend(partial(self._submit_one, site, claim) for claim in singles)
        threads = min(self.rt.settings.worker_submit_threads, len(units))
        if threads <= 1:
            for unit in units:
                unit()
        else:
            with ThreadPoolExecutor(threads, thread_name_prefix=f"submit-{site.name}") as pool:
                futures = [pool.submit(unit) for unit in units]
            for future in futures:
                future.result()
        return bool(claims)

    @staticmethod
    def _batch_adapter(site: SiteEntry, claim: Claim) -> BatchSubmitter | None:
        """The adapter that can take this claim in a batch: a plain job (no script to
        store, no inputs to stage, not a recovery) on a site that submits in batches."""
        if claim.recovering or claim.spec.inputs or claim.spec.executable is None:
            return None
        try:
            adapter = site.adapter_for(claim.owner)
        except NoAccount:
            return None  # the single path records the refusal
        # Looked up on the class: an isinstance() check against the protocol would
        # evaluate every property of the adapter (`files` may raise).
        if not callable(getattr(type(adapter), "submit_many", None)):
            return None
        return cast(BatchSubmitter, adapter)

    def _submit_batch(self, site: SiteEntry, adapter: BatchSubmitter,
                      claims: Sequence[Claim]) -> None:
        requests = [build_submit_request(c.spec, c.tag, c.workdir) for c in claims]
        outcomes = adapter.submit_many(requests)
        # Transient errors of the command propagate: every lease stays, recovery by tag.
        _fault_after_submit()
        placed = []
        for claim, outcome in zip(claims, outcomes, strict=True):
            if isinstance(outcome, str):
                placed.append((claim, outcome, None))
            elif outcome.transient:
                log.warning("job %s at %s: no answer to its submission (%s); it is "
                            "recovered by its tag", claim.job_id, site.name, outcome.message)
            else:
                self._record_rejection(site, claim,
                                       f"{Reason.SUBMIT_REJECTED}: {outcome.message}")
        self._record_submitted(site, placed)

    def _submit_one(self, site: SiteEntry, claim: Claim) -> None:
        try:
            adapter = site.adapter_for(claim.owner)
        except NoAccount as exc:  # the site's mapping changed since the job was accepted
            self._record_rejection(site, claim, f"{Reason.SUBMIT_REJECTED}: {exc.detail}")
            return
        native_id = None
        if claim.recovering:
            # The earlier submit may have reached the scheduler: adopt, never duplicate.
            native_id = adapter.find_by_tag(claim.tag, claim.workdir)
            if native_id:
                log.info("adopted %s as %s at %s", claim.tag, native_id, site.name)
        staged: StageInSummary | None = None
        if native_id is None and claim.spec.inputs:
            staged = self._stage_in(site, adapter, claim)
            if staged is None:
                return
        if native_id is None:
            request = build_submit_request(claim.spec, claim.tag, claim.workdir)
            try:
                native_id = adapter.submit(request)
            except SubmitRejected as exc:
                self._record_rejection(site, claim, f"{Reason.SUBMIT_REJECTED}: {exc.message}")
                return
            # Transient errors propagate: the lease stays and a later cycle recovers it.
            _fault_after_submit()
        self._record_submitted(site, [(claim, native_id, staged)])

    def _record_submitted(self, site: SiteEntry,
                          placed: Sequence[tuple[Claim, str, StageInSummary | None]]) -> None:
        """Commit the site's job ids and move the jobs to QUEUED, in one transaction."""
        if not placed:
            return
        self.rt.metrics.submissions.labels(site.name, "submitted").inc(len(placed))
        now = utcnow()
        with transaction(self.rt.sessions) as session:
            # All rows in two statements, locked in id order (attempts before jobs, as
            # everywhere), so concurrent recorders never deadlock.
            attempts = {a.id: a for a in session.scalars(
                select(Attempt).where(Attempt.id.in_([c.attempt_id for c, _, _ in placed]))
                .order_by(Attempt.id).with_for_update())}
            jobs = {j.id: j for j in session.scalars(
                select(Job).where(Job.id.in_([c.job_id for c, _, _ in placed]))
                .order_by(Job.id).with_for_update())}
            for claim, native_id, staged in placed:
                attempt = attempts[claim.attempt_id]
                if attempt.state != SUBMITTING:
                    continue  # another worker recovered and recorded it meanwhile
                attempt.native_id = native_id
                attempt.state = JobState.QUEUED.value
                attempt.submitted_at = now
                attempt.lease_until = None
                job = jobs[claim.job_id]
                reason = f"submitted to site '{site.name}' as job {native_id}"
                if staged is not None:
                    reason += f" ({staged.describe()})"
                if advance(session, job, JobState.QUEUED, actor=self.actor, at=now,
                           reason=reason):
                    self.rt.metrics.transitions.labels(JobState.QUEUED.value).inc()

    def _stage_in(self, site: SiteEntry, adapter: Adapter, claim: Claim
                  ) -> StageInSummary | None:
        """Stage the claim's inputs under a renewed lease. None when there is nothing to
        submit now: the job failed (recorded), the lease was lost, or the site is down."""
        if not self._renew(claim.attempt_id):
            return None
        job = StageInJob(claim.job_id, claim.owner_id, claim.owner, claim.workdir, claim.spec)

        def proceed() -> bool:
            # Between inputs: stop on a lost lease, or on a cancel (recorded just after).
            return self._renew(claim.attempt_id) and not self._cancel_requested(claim.job_id)

        try:
            staged = stage_in(self.rt, site, adapter, job, proceed)
        except GatewayError as exc:
            self._record_rejection(site, claim, f"{Reason.STAGE_IN_FAILED}: {exc.detail}")
            return None
        except AdapterError as exc:
            if exc.transient:
                # The lease runs out and this or another worker stages again, continuing
                # from what reached the site.
                log.warning("job %s: staging interrupted at %s: %s", claim.job_id,
                            site.name, exc.message)
                return None
            self._record_rejection(site, claim, f"{Reason.STAGE_IN_FAILED}: {exc.message}")
            return None
        # A cancel between inputs stopped the staging, or came during the last one.
        if self._cancel_before_submit(claim):
            return None
        # Submit only while still holding the lease: whoever took it over submits instead.
        if staged is None or not self._renew(claim.attempt_id):
            log.warning("job %s: lease lost while staging; not submitting", claim.job_id)
            return None
        return staged

    def _cancel_requested(self, job_id: str) -> bool:
        with self.rt.sessions() as session:
            return bool(session.scalar(select(Job.cancel_requested).where(Job.id == job_id)))

    def _cancel_before_submit(self, claim: Claim) -> bool:
        """A cancel that came while the job was staging in: end it CANCELLED here (nothing
        reached the scheduler). True when the job was cancelled."""
        if not self._cancel_requested(claim.job_id):  # the usual case: no locks taken
            return False
        with transaction(self.rt.sessions) as session:
            attempt = session.get(Attempt, claim.attempt_id, with_for_update=True)
            job = session.get(Job, claim.job_id, with_for_update=True)
            assert attempt is not None and job is not None
            if not job.cancel_requested or attempt.state != SUBMITTING \
                    or attempt.lease_owner != self.id:
                return False
            attempt.state = JobState.CANCELLED.value
            attempt.reason = Reason.CANCELLED_BY_USER
            attempt.lease_until = None
            attempt.ended_at = utcnow()
            advance(session, job, JobState.CANCELLED, actor=self.actor,
                    reason=f"{Reason.CANCELLED_BY_USER} while staging in; not submitted")
        log.info("job %s: cancelled while staging in", claim.job_id)
        return True

    def _renew(self, attempt_id: int) -> bool:
        """Extend this worker's lease on the attempt; False when it no longer holds it."""
        with transaction(self.rt.sessions) as session:
            result = session.execute(
                update(Attempt)
                .where(Attempt.id == attempt_id, Attempt.lease_owner == self.id,
                       Attempt.lease_until.is_not(None))
                .values(lease_until=utcnow() + self.staging_lease)
                .execution_options(synchronize_session=False))
            return bool(getattr(result, "rowcount", 0) == 1)

    def _record_rejection(self, site: SiteEntry, claim: Claim, reason: str) -> None:
        self.rt.metrics.submissions.labels(site.name, "rejected").inc()
        with transaction(self.rt.sessions) as session:
            attempt = session.get(Attempt, claim.attempt_id, with_for_update=True)
            assert attempt is not None
            if attempt.state != SUBMITTING:
                return
            attempt.state = JobState.FAILED.value
            attempt.reason = reason
            attempt.lease_until = None
            attempt.ended_at = utcnow()
            job = session.get(Job, claim.job_id, with_for_update=True)
            assert job is not None
            advance(session, job, JobState.FAILED, actor=self.actor, reason=reason)

    # --- cancels ----------------------------------------------------------------------

    def _send_cancels(self, site: SiteEntry) -> bool:
        """Send the cancels not sent yet; True when there were any."""
        with self.rt.sessions() as session:
            pending = session.execute(
                select(Attempt.id, Attempt.native_id, User.username)
                .join(Job, Job.id == Attempt.job_id)
                .join(User, User.id == Job.owner_id)
                .where(Attempt.site_name == site.name, Job.cancel_requested.is_(True),
                       Attempt.native_id.is_not(None), Attempt.cancel_sent_at.is_(None),
                       Attempt.state.in_(LIVE_ATTEMPT_STATES))
            ).all()
        for attempt_id, native_id, owner in pending:
            assert native_id is not None
            try:
                site.adapter_for(owner).cancel(native_id)
            except NoAccount as exc:
                log.error("cannot cancel %s at %s: %s", native_id, site.name, exc.detail)
                continue
            except UnknownJob:
                # Gone already; its final state comes from the status poll.
                log.warning("cancel of %s at %s: the site does not know it", native_id,
                            site.name)
            with transaction(self.rt.sessions) as session:
                session.execute(update(Attempt).where(Attempt.id == attempt_id)
                                .values(cancel_sent_at=utcnow()))
        return bool(pending)

    # --- status -----------------------------------------------------------------------

    def _poll(self, site: SiteEntry) -> bool:
        """One status call for every active attempt of the site (one per account on a
        site that maps accounts); write only what changed.

        True when the site was asked (it had active attempts)."""
        with self.rt.sessions() as session:
            active = session.execute(
                select(Attempt.id, Attempt.native_id, Attempt.state, Attempt.raw_state,
                       User.username)
                .join(Job, Job.id == Attempt.job_id)
                .join(User, User.id == Job.owner_id)
                .where(Attempt.site_name == site.name, Attempt.native_id.is_not(None),
                       Attempt.state.in_((JobState.QUEUED.value, JobState.RUNNING.value)))
            ).all()
        if not active:
            return False
        ids_by_adapter: dict[int, tuple[Adapter, list[str]]] = {}
        for row in active:
            try:
                adapter = site.adapter_for(row.username)
            except NoAccount as exc:
                log.error("job %s at %s cannot be followed: %s", row.native_id, site.name,
                          exc.detail)
                continue
            ids_by_adapter.setdefault(id(adapter), (adapter, []))[1].append(row.native_id)
        statuses: dict[str, JobStatus] = {}
        for adapter, native_ids in ids_by_adapter.values():
            statuses.update(adapter.status(native_ids))
            self.rt.metrics.status_calls.labels(site.name).inc()
        changed = sorted(
            (row.id, statuses[row.native_id]) for row in active
            if row.native_id in statuses
            and (statuses[row.native_id].state.value, statuses[row.native_id].raw_state)
            != (row.state, row.raw_state)
        )
        if not changed:
            return True
        with transaction(self.rt.sessions) as session:
            # Two statements for all rows, locked in id order, attempts before jobs.
            attempts = {a.id: a for a in session.scalars(
                select(Attempt).where(Attempt.id.in_([i for i, _ in changed]))
                .order_by(Attempt.id).with_for_update())}
            jobs = {j.id: j for j in session.scalars(
                select(Job).where(Job.id.in_({a.job_id for a in attempts.values()}))
                .order_by(Job.id).with_for_update())}
            for attempt_id, status in changed:
                attempt = attempts[attempt_id]
                self._apply(session, jobs[attempt.job_id], attempt, status)
        return True

    def _apply(self, session: Session, job: Job, attempt: Attempt, status: JobStatus) -> None:
        if JobState(attempt.state).is_final:
            return
        attempt.raw_state = status.raw_state
        job.raw_state = status.raw_state
        if status.started_at and attempt.started_at is None:
            attempt.started_at = status.started_at
        if status.state is NativeState.UNKNOWN:
            log.warning("job %s: unknown scheduler state %r", job.id, status.raw_state)
            return
        if status.state is NativeState.QUEUED:
            attempt.reason = status.reason
            return
        if status.state is NativeState.RUNNING:
            attempt.state = JobState.RUNNING.value
            if advance(session, job, JobState.RUNNING, actor=self.actor, raw_state=status.raw_state,
                       at=status.started_at, reason=status.reason):
                self.rt.metrics.transitions.labels(JobState.RUNNING.value).inc()
            return
        target = _FINAL_TARGET[status.state]
        attempt.state = target.value
        attempt.exit_code = status.exit_code
        attempt.reason = status.reason
        attempt.ended_at = status.ended_at or utcnow()
        job.exit_code = status.exit_code
        reason = status.reason
        if target is JobState.CANCELLED and job.cancel_requested:
            reason = Reason.CANCELLED_BY_USER
        elif reason is None and status.exit_code:
            reason = because(Reason.EXIT_CODE, status.exit_code, " ")
        if target is not JobState.CANCELLED and job.spec.get("outputs"):
            # Collect the outputs first (a failed run's too); _stage_outs finishes the job.
            attempt.lease_until = attempt.lease_owner = None
            if advance(session, job, JobState.STAGING_OUT, actor=self.actor,
                       raw_state=status.raw_state, at=attempt.ended_at,
                       reason=f"run ended {target.value}" + (f" ({reason})" if reason else "")
                       + "; collecting outputs"):
                self.rt.metrics.transitions.labels(JobState.STAGING_OUT.value).inc()
            return
        if advance(session, job, target, actor=self.actor, raw_state=status.raw_state,
                   at=attempt.ended_at, reason=reason):
            self.rt.metrics.transitions.labels(target.value).inc()

    # --- stage-out --------------------------------------------------------------------

    def _stage_outs(self, site: SiteEntry) -> bool:
        """Collect the outputs of runs that ended; True when there were any."""
        claimed = self._claim_stage_outs(site)
        for attempt_id, job_id, workdir, spec, owner in claimed:
            self._stage_out_one(site, attempt_id, job_id, workdir, spec, owner)
        return bool(claimed)

    def _claim_stage_outs(self, site: SiteEntry
                          ) -> list[tuple[int, str, str, JobSpec, str | None]]:
        now = utcnow()
        with transaction(self.rt.sessions) as session:
            rows = session.execute(
                select(Attempt, Job.spec, User.username)
                .join(Job, Job.id == Attempt.job_id)
                .join(User, User.id == Job.owner_id)
                .where(Attempt.site_name == site.name,
                       Job.state == JobState.STAGING_OUT.value,
                       Attempt.state.in_((JobState.COMPLETED.value, JobState.FAILED.value)),
                       or_(Attempt.lease_until.is_(None), Attempt.lease_until < now))
                .order_by(Attempt.id)
                .limit(CLAIM_BATCH)
                .with_for_update(of=Attempt, skip_locked=True)
            ).all()
            claimed = []
            for attempt, spec, owner in rows:
                attempt.lease_until = now + self.staging_lease
                attempt.lease_owner = self.id
                claimed.append((attempt.id, attempt.job_id, attempt.workdir,
                                JobSpec.model_validate(spec, context=SUBMITTED), owner))
            return claimed

    def _stage_out_one(self, site: SiteEntry, attempt_id: int, job_id: str, workdir: str,
                       spec: JobSpec, owner: str | None) -> None:
        collected: Collected | None = None
        failure = None
        try:
            files = site.adapter_for(owner).files
            collected = collect(files, workdir, spec.outputs, spec.outputs_mode,
                                StagingLimits.from_settings(self.rt.settings),
                                BlobStore(self.rt.settings.store_dir),
                                lambda: self._renew(attempt_id),
                                self._store_left(job_id)
                                if spec.outputs_mode is OutputsMode.FETCH else 0)
            if collected is None:
                return  # lease lost: whoever holds it now finishes the job
        except GatewayError as exc:
            failure = exc.detail
        except AdapterError as exc:
            if exc.transient:
                log.warning("job %s: stage-out interrupted at %s: %s", job_id, site.name,
                            exc.message)
                return  # the lease runs out and a later cycle collects again
            failure = exc.message
        self._finish_stage_out(site, attempt_id, job_id, collected, failure)

    def _store_left(self, job_id: str) -> int:
        """Bytes the job's owner may still add to the gateway store (their quota)."""
        with self.rt.sessions() as session:
            owner_id = session.scalar(select(Job.owner_id).where(Job.id == job_id))
            assert owner_id is not None
            return self.rt.settings.store_quota_bytes - store_usage(session, owner_id)

    def _finish_stage_out(self, site: SiteEntry, attempt_id: int, job_id: str,
                          collected: Collected | None, failure: str | None) -> None:
        with transaction(self.rt.sessions) as session:
            attempt = session.get(Attempt, attempt_id, with_for_update=True)
            assert attempt is not None
            if attempt.lease_owner != self.id or attempt.lease_until is None:
                return  # another worker took over
            job = session.get(Job, job_id, with_for_update=True)
            assert job is not None
            attempt.lease_until = attempt.lease_owner = None
            run_reason = attempt.reason or (
                f"exit code {attempt.exit_code}" if attempt.exit_code else None)
            session.execute(delete(JobOutput).where(JobOutput.job_id == job_id))
            if collected is not None:
                now = utcnow()
                session.add_all(JobOutput(job_id=job_id, path=o.path, size=o.size,
                                          sha256=o.sha256, location=o.location,
                                          site_name=site.name, site_path=o.site_path,
                                          created_at=now) for o in collected.outputs)
            if failure is not None:
                target = JobState.FAILED
                note = f"{Reason.STAGE_OUT_FAILED}: {failure}"
            else:
                assert collected is not None
                target = JobState(attempt.state)
                note = collected.describe()
            reason = f"{run_reason}; {note}" if run_reason else note
            if advance(session, job, target, actor=self.actor, reason=reason):
                self.rt.metrics.transitions.labels(target.value).inc()

    def _mark_site(self, site: SiteEntry, status: str, reason: str | None) -> None:
        if self._site_status.get(site.name) == (status, reason):
            return
        with transaction(self.rt.sessions) as session:
            session.execute(update(Site).where(Site.name == site.name)
                            .values(status=status, status_reason=reason))
        self._site_status[site.name] = (status, reason)


FAULT_AFTER_SUBMIT_ENV = "GRIDGATE_FAULT_AFTER_SUBMIT"


def _fault_after_submit() -> None:
    """Test-only crash point (off unless the env says `exit`): die like `kill -9` after
    the scheduler took the job and before its id is committed, to prove recovery adopts it."""
    if os.environ.get(FAULT_AFTER_SUBMIT_ENV) == "exit":
        os._exit(137)


def run_worker(settings: Settings, stop: threading.Event) -> None:
    """Run one standalone worker until `stop` is set (what `gridgate worker` calls)."""
    runtime = build_runtime(settings)
    try:
        Worker(runtime).run(stop)
    finally:
        runtime.close()
