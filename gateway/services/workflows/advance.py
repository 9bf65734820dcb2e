"""Advancing workflows, from the database alone, once per worker cycle
(gateway.worker.workflows): each instance's state is read from its row and its job's,
`workflows.readiness.advance` says what to do, and it is done in the same unit of work.

- An instance whose producers have all completed is opened: its data edges become job
  inputs (gateway.services.workflows.inputs) and its gate is lifted, so routing and the
  site steps take it like any job.
- A failed instance is retried with a fresh job when `workflows.retry` says so (by
  default only for failures the site caused: node failure, preemption, boot failure),
  after its backoff; else it fails and only its descendants are skipped: their jobs end
  CANCELLED with the reason DependencyNeverSatisfied, the rest goes on. With
  `fail_fast`, every pending instance is skipped and the running ones cancelled.
- A cancel of the workflow cancels every unfinished instance.

Crash safety: each workflow is one unit of work under its row's lock (and its jobs'), so
two workers never advance it at once and a crash before the commit changed nothing: the
next cycle does it again. A retry's new job and the instance row naming it are written
together, so a step is never submitted twice, nor forgotten.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from adapters.reasons import because
from gateway.db.models import Job
from gateway.db.workflow_models import Workflow, WorkflowStep
from gateway.domain.failure_cause import failure_cause
from gateway.domain.job_relations import Gate
from gateway.domain.principal import Principal
from gateway.domain.states import JobState, Reason
from gateway.repositories import workflows as repo
from gateway.repositories.identity import users
from gateway.repositories.jobs import rows as jobs
from gateway.services.jobs import submission as job_service
from gateway.services.jobs.inputs import StagingLimits
from gateway.services.lifecycle.transitions import advance as move
from gateway.services.lifecycle.transitions import note, request_cancel
from gateway.services.sites.registry import SiteRegistry
from gateway.services.workflows.inputs import MissingOutput, resolve, with_inputs
from gateway.store.blobs import BlobStore
from workflows.limits import Limits
from workflows.plan import Instance, Plan, plan_workflow
from workflows.readiness import FINAL_STEP_STATES, StepState, WorkflowState, advance
from workflows.retry import FailureCause, decide_retry

# A workflow accepted once is planned again whatever the limits are now.
_ANY_SIZE = Limits(max_steps=10**9, max_matrix=10**9, max_instances=10**9,
                   max_retries=10**9)
_PLANS: OrderedDict[str, Plan] = OrderedDict()
_PLANS_KEPT = 64
_PLANS_LOCK = threading.Lock()

@dataclass(frozen=True)
class Submitting:
    """What a retry needs to submit a fresh job as the owner would."""

    registry: SiteRegistry
    staging: StagingLimits
    charged: bool
    max_array_tasks: int
    store: BlobStore


def cause_of(job: Job) -> FailureCause | None:
    """Why a FAILED job failed, as far as a retry policy cares (None: unknown)."""
    return failure_cause(job.reason, job.exit_code)


def plan_of(workflow_id: str, spec: Mapping[str, Any]) -> Plan:
    """The plan of the workflow `workflow_id` (its spec never changes, so plans are kept
    by id, for the API's threads and the worker alike)."""
    with _PLANS_LOCK:
        plan = _PLANS.get(workflow_id)
        if plan is not None:
            _PLANS.move_to_end(workflow_id)
            return plan
    plan = plan_workflow(spec, _ANY_SIZE)  # outside the lock: a big one takes a while
    with _PLANS_LOCK:
        _PLANS[workflow_id] = plan
        while len(_PLANS) > _PLANS_KEPT:
            _PLANS.popitem(last=False)
    return plan


def running_workflows(session: Session, limit: int, after: str | None) -> list[str]:
    """Ids of workflows still running, a batch at a time."""
    return repo.running_ids(session, limit, after)


def advance_workflow(session: Session, workflow_id: str, actor: str, now: datetime,
                     submitting: Submitting) -> bool:
    """Advance one workflow (see module); True when anything changed."""
    workflow = repo.lock(session, workflow_id)
    if workflow is None or workflow.state != WorkflowState.RUNNING.value:
        return False
    plan = plan_of(workflow.id, workflow.spec)
    rows = repo.step_rows(session, workflow_id)
    open_rows = [r for r in rows.values() if StepState(r.state) not in FINAL_STEP_STATES]
    locked = jobs.lock_many(session, [r.job_id for r in open_rows if r.job_id])
    run = _Run(session, workflow, plan, rows, locked, actor, now, submitting)
    states = {i.id: run.state_of(i) for i in plan.instances}
    moves = advance(plan, states, cancel=workflow.cancel_requested)
    for instance_id in moves.submit:
        run.open(plan[instance_id])
    for skip in moves.skip:
        run.skip(skip.instance, skip.reason)
    for instance_id in moves.cancel:
        run.cancel(instance_id)
    if moves.finished:
        workflow.state, workflow.ended_at = moves.state.value, now
        counts = _counts(rows.values())
        repo.add_event(session, workflow, now, workflow.state,
                       f"{moves.state.value}: {counts}", actor)
        run.changed = True
    if run.changed:
        workflow.updated_at = now
    session.flush()
    return run.changed


def _counts(rows: Any) -> str:
    tally: dict[str, int] = {}
    for row in rows:
        tally[row.state] = tally.get(row.state, 0) + 1
    return ", ".join(f"{n} {state}" for state, n in sorted(tally.items()))


class _Run:
    """One advance of one workflow: its rows, locked jobs, and what it wrote."""

    def __init__(self, session: Session, workflow: Workflow, plan: Plan,
                 rows: dict[str, WorkflowStep], locked: dict[str, Job], actor: str,
                 now: datetime, submitting: Submitting) -> None:
        self.session, self.workflow, self.plan, self.rows = session, workflow, plan, rows
        self.locked, self.actor, self.now, self.submitting = locked, actor, now, submitting
        self.changed = False
        self.labels = {i.id: i.label for i in plan.instances}

    def state_of(self, instance: Instance) -> StepState:
        """The instance's state now, recording a change (and retrying a failure)."""
        row = self.rows[instance.id]
        current = StepState(row.state)
        if current in FINAL_STEP_STATES:
            return current
        job = self.locked.get(row.job_id or "")
        if job is None:
            return StepState.PENDING
        state = JobState(job.state)
        if state is JobState.ACCEPTED and job.gate == Gate.WORKFLOW.value:
            now = StepState.PENDING
        elif not state.is_final:
            now = StepState.RUNNING
        elif state is JobState.COMPLETED:
            now = StepState.COMPLETED
        elif state is JobState.CANCELLED:
            now = StepState.CANCELLED
        else:
            now = self._failed(instance, row, job)
        keep = now in (StepState.RUNNING, StepState.FAILED)
        self._record(row, now, row.reason if keep else job.reason)
        return now

    def _failed(self, instance: Instance, row: WorkflowStep, job: Job) -> StepState:
        if self.workflow.cancel_requested:
            return StepState.FAILED
        decision = decide_retry(instance.retry, row.failures + 1, cause_of(job))
        if not decision.retry:
            row.reason = f"{job.reason}; {decision.reason}"
            return StepState.FAILED
        if row.retry_at is None:
            row.retry_at = self.now + timedelta(seconds=decision.delay_seconds)
            row.reason = decision.reason
            repo.add_event(self.session, self.workflow, self.now, StepState.RUNNING,
                           f"{self.labels[instance.id]} failed ({job.reason}); "
                           f"{decision.reason}", self.actor, instance.id)
            self.changed = True
        if row.retry_at <= self.now:
            self._retry(instance, row, job)
        return StepState.RUNNING

    def _retry(self, instance: Instance, row: WorkflowStep, job: Job) -> None:
        """A fresh job for the instance, as its owner would submit it again."""
        s = self.submitting
        owner = users.get(self.session, job.owner_id)
        assert owner is not None
        principal = Principal(user_id=owner.id, issuer=owner.issuer, subject=owner.subject,
                              username=owner.username, roles=frozenset(owner.roles),
                              account_name=owner.username)
        # As stored: the new job meets today's rules at its claim (lifecycle.claims.claim_accepted).
        spec = jobs.stored_spec(job.spec)
        new, _ = job_service.submit(self.session, s.registry, principal, spec, None,
                                    s.staging, s.charged, s.max_array_tasks, store=s.store)
        repo.move_dependencies(self.session, job.id, new["id"])
        row.job_id, row.failures, row.retry_at = new["id"], row.failures + 1, None
        repo.add_event(self.session, self.workflow, self.now, StepState.RUNNING,
                       f"{self.labels[instance.id]}: retry {row.failures} as job {new['id']}",
                       self.actor, instance.id)
        self.changed = True

    def _record(self, row: WorkflowStep, state: StepState, reason: str | None) -> None:
        if row.state == state.value:
            row.reason = reason if state in FINAL_STEP_STATES else row.reason
            return
        row.state, row.reason = state.value, reason
        self.changed = True
        if state in FINAL_STEP_STATES:
            repo.add_event(self.session, self.workflow, self.now, state,
                           f"{self.labels[row.instance]} {state.value}"
                           + (f" ({reason})" if reason else ""), self.actor, row.instance)

    def open(self, instance: Instance) -> None:
        """Lift the gate of a pending instance whose producers have completed, with its
        data edges as job inputs."""
        row = self.rows[instance.id]
        job = self.locked[row.job_id or ""]
        job_of = {i: r.job_id for i, r in self.rows.items()}
        try:
            inputs = resolve(self.session, instance, job_of, self.labels,
                             self.workflow.owner_id, self.now)
        except MissingOutput as exc:
            move(self.session, job, JobState.FAILED, actor=self.actor,
                 reason=because(Reason.BAD_JOB_REQUEST, str(exc)), at=self.now)
            job.gate = None
            self._record(row, StepState.FAILED, str(exc))
            return
        if inputs:
            job.spec = with_inputs(job.spec, inputs)
        job.gate, job.reason, job.updated_at = None, None, self.now
        needs = ", ".join(self.labels[n] for n in instance.needs)
        note(self.session, job, f"workflow: {needs} completed"
             + (f"; {len(inputs)} input(s) from them" if inputs else ""),
             actor=self.actor, at=self.now)
        self._record(row, StepState.RUNNING, None)

    def skip(self, instance_id: str, reason: str) -> None:
        """A pending instance that can never run: its job ends CANCELLED."""
        row = self.rows[instance_id]
        job = self.locked.get(row.job_id or "")
        why = because(Reason.DEPENDENCY_NEVER_SATISFIED, reason)
        if job is not None and not JobState(job.state).is_final:
            job.gate = None
            move(self.session, job, JobState.CANCELLED, actor=self.actor, reason=why,
                 at=self.now)
        self._record(row, StepState.SKIPPED, why)

    def cancel(self, instance_id: str) -> None:
        """Cancel an unfinished instance's job (the workflow was cancelled, or fail_fast)."""
        row = self.rows[instance_id]
        job = self.locked.get(row.job_id or "")
        if job is None or JobState(job.state).is_final:
            self._record(row, StepState.CANCELLED, "the workflow was cancelled")
            return
        if not job.cancel_requested:
            request_cancel(self.session, job, self.actor)
            self.changed = True
        if JobState(job.state) is JobState.CANCELLED:
            self._record(row, StepState.CANCELLED, job.reason)

