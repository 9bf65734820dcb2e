"""Commands on jobs: submit (a job, or a job array: gateway.services.jobs.arrays; either
with dependencies: gateway.services.jobs.dependencies) and cancel. Services flush; the
boundary (route or worker step) commits. Reads for the API live in job_queries."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy.orm import Session

from gateway.db.base import utcnow
from gateway.domain.errors import Conflict, Forbidden, Invalid
from gateway.domain.job_origin import JobOrigin
from gateway.domain.jobspec import JobSpec
from gateway.domain.principal import Principal
from gateway.domain.states import JobState
from gateway.repositories.jobs import origin_documents
from gateway.repositories.jobs import relations as job_relations
from gateway.repositories.jobs import rows as jobs
from gateway.repositories.jobs.events import NewEvent
from gateway.repositories.jobs.rows import NewJob, ProjectRef
from gateway.services.images import container_images
from gateway.services.jobs import arrays as job_arrays
from gateway.services.jobs import dependencies
from gateway.services.jobs.inputs import (
    StagingLimits,
    check_deliveries,
    check_inputs,
    check_shared_binds,
)
from gateway.services.jobs.queries import JobRow, ensure_readable, job_detail
from gateway.services.lifecycle.transitions import request_cancel
from gateway.services.mail import requests as mail_requests
from gateway.services.money import quotes
from gateway.services.money.bank import InsufficientFunds, Payer
from gateway.services.routing.placement import admit, possible_sites
from gateway.services.sites.registry import SiteRegistry
from gateway.store.blobs import BlobStore
from workflows.limits import DEFAULT_LIMITS


def request_hash(spec: JobSpec) -> str:
    """A stable digest of a job request, for Idempotency-Key comparison."""
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _resolve_project(session: Session, principal: Principal, name: str | None
                     ) -> ProjectRef:
    """The project to charge: named (and the caller a member), or personal."""
    conn = session.connection()
    if name is None:
        project = jobs.personal_project(conn, principal.user_id)
        if project is None:
            raise Invalid("You have no personal project; name one in 'project'.", field="project")
        return project
    project = jobs.member_project(conn, principal.user_id, name)
    if project is None:
        # Same answer for "no such project" and "not yours": names are not an oracle.
        raise Invalid(f"You are not a member of a project named '{name}'.", field="project")
    return project


def submit(
    session: Session,
    registry: SiteRegistry,
    principal: Principal,
    spec: JobSpec,
    idempotency_key: str | None = None,
    limits: StagingLimits | None = None,
    charged: bool = False,
    max_array_tasks: int = DEFAULT_LIMITS.max_array_tasks,
    *,
    store: BlobStore,
    mail: mail_requests.MailPolicy = mail_requests.OFF,
    origin: JobOrigin = JobOrigin.API,
    origin_document: Mapping[str, Any] | None = None,
) -> tuple[JobRow, bool]:
    """Accept a job (or, with `array`, a job array: its first task is returned). Returns
    (job row, created); a replayed Idempotency-Key returns the original job with
    created=False. Inputs are checked against `limits` (if given), an array against
    `max_array_tasks`. `charged`: the bank is on, so a lien for each job's quote is held
    (or, when its project cannot pay, InsufficientFunds is raised and nothing is kept). An
    uploaded container image is read from `store` and the MPI found in it stored in the
    spec. A job asking for mail is checked against `mail` (what the relay allows).
    `origin`: the door it came in by (GA4GH TES lists only its own), and
    `origin_document` what that door received, kept beside the job when given."""
    digest = request_hash(spec) if idempotency_key else ""
    if idempotency_key:
        replay = _replayed(session, principal, idempotency_key, digest)
        if replay is not None:
            return replay, False
    spec = container_images.resolve(session, store, principal.user_id, spec)
    project = _resolve_project(session, principal, spec.project)
    mail_ask = mail_requests.resolve(session, mail, principal.user_id, spec.notify)
    now = utcnow()
    if spec.container is not None and spec.container.binds and limits is not None:
        check_shared_binds(session, limits, principal, spec)
    site = admit(session, registry, spec, principal.account_name, project.name, now)
    if spec.inputs:
        check_inputs(session, registry, limits or StagingLimits.unlimited(), principal.user_id,
                     spec)
    if spec.deliver and limits is not None:
        check_deliveries(session, registry, limits, principal, spec)
    array = job_arrays.parsed(spec.array, max_array_tasks) if spec.array else None
    gate, reason = dependencies.gate_at_submit(session.connection(), principal,
                                               spec.depends_on)
    job_id = str(uuid.uuid4())
    accepted = (f"accepted for site '{site}'" if site else
                "accepted; waiting for a routing pass to choose its site")
    job = NewJob(
        id=job_id, owner_id=principal.user_id, project_id=project.id, name=spec.name,
        spec=spec.model_dump(mode="json"), site_name=site, created_at=now,
        labels=spec.labels,
        first_event=NewEvent(job_id, now, None, JobState.ACCEPTED.value,
                             f"{accepted}; {reason}" if reason else accepted,
                             principal.display),
        idempotency_key=idempotency_key, request_hash=digest,
        reason=reason, gate=None if gate is None else gate.value, origin=origin.stored)
    record, new_jobs = (None, [job]) if array is None else job_arrays.expand(job, array)
    # A keyed request may lose to its twin: its first event is written (with the key, in
    # a savepoint) before its lien; otherwise, on PostgreSQL, the event and the lien of a
    # lone job are one round trip (the allocation's row lock is then held the shortest).
    one_trip = (charged and not idempotency_key and record is None
                and quotes.one_round_trip(session))
    if record is not None:
        job_relations.insert_array(session, record)  # before its tasks: they refer to it
    if not jobs.insert_new(session, new_jobs[0], first_event=not one_trip):
        # A concurrent request with the same key won the race: answer as it did.
        if record is not None:
            job_relations.delete_array(session, record.id)
        replay = _replayed(session, principal, idempotency_key or "", digest)
        assert replay is not None
        return replay, False
    jobs.insert_many(session, new_jobs[1:])
    if origin_document is not None:
        origin_documents.add(session, new_jobs[0].id, origin_document)
    mail_requests.record(session, [new.id for new in new_jobs], mail_ask)
    if spec.depends_on:
        job_relations.insert_dependencies(session, [
            (new.id, dep.job, dep.when.value) for new in new_jobs for dep in spec.depends_on])
    if charged:
        _hold(session, registry, principal, spec, job, new_jobs, project, one_trip)
    first = new_jobs[0]
    return {**first.row(), "project_name": project.name, "owner_name": principal.display}, True


def _hold(session: Session, registry: SiteRegistry, principal: Principal, spec: JobSpec,
          job: NewJob, new_jobs: Sequence[NewJob], project: ProjectRef, one_trip: bool
          ) -> None:
    """A lien for each new job's quote; a refusal names the job (for its event)."""
    payer = Payer(project.id, project.name)
    site_quotes = quotes.quote(session, spec,
                               possible_sites(registry, spec, principal.account_name,
                                              project.name),
                               registry.rate_cards)
    try:
        if one_trip:
            quotes.event_and_hold(session, job.first_event, payer, site_quotes,
                                  principal.display)
        else:
            for new in new_jobs:
                quotes.hold_for_submit(session, new.id, payer, site_quotes, job.created_at,
                                       principal.display)
    except InsufficientFunds as exc:
        if exc.refusal is not None:
            exc.refusal = replace(exc.refusal, job_name=spec.name)
        raise


def _replayed(
    session: Session, principal: Principal, key: str, digest: str
) -> JobRow | None:
    keyed = jobs.keyed_job(session, principal.user_id, key)
    if keyed is None:
        return None
    if keyed.request_hash != digest:
        raise Invalid("This Idempotency-Key was already used with a different request body; "
                      "use a new key for a new job.", field="Idempotency-Key")
    return job_detail(session.connection(), principal, keyed.job_id)[0]


def cancel(session: Session, principal: Principal, job_id: str) -> JobRow:
    """Cancel now if nothing was submitted yet; otherwise ask the worker to."""
    ensure_readable(session.connection(), principal, job_id)
    job = jobs.lock(session, job_id)
    assert job is not None
    if job.owner_id != principal.user_id and not principal.has_role("admin"):
        raise Forbidden("Only the job's owner can cancel it.")
    state = JobState(job.state)
    if state.is_final:
        raise Conflict(f"Job {job.id} is already {state.value}; there is nothing to cancel.")
    if state is JobState.STAGING_OUT:
        raise Conflict(f"Job {job.id} has finished running; its outputs are being collected "
                       "and it ends on its own shortly.")
    request_cancel(session, job, principal.display)
    session.flush()
    return job_detail(session.connection(), principal, job_id)[0]
