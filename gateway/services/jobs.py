"""Commands on jobs: submit and cancel. Services flush; the boundary (route or worker
step) commits. Reads for the API live in job_queries."""

from __future__ import annotations

import hashlib
import json
import uuid
from contextlib import nullcontext

from sqlalchemy import Connection, bindparam, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gateway.auth.principal import Principal
from gateway.db.base import utcnow
from gateway.db.models import (
    Event,
    IdempotencyKey,
    Job,
    JobLabel,
    Membership,
    Project,
)
from gateway.domain.errors import Conflict, Forbidden, Invalid
from gateway.domain.jobspec import JobSpec
from gateway.domain.states import JobState, Reason
from gateway.repositories.job_queries import JobRecord
from gateway.scheduling.feasibility import unfit_reason
from gateway.services.job_inputs import StagingLimits, check_inputs
from gateway.services.job_queries import JobRow, ensure_visible, job_detail
from gateway.services.sites import Admission, SiteRegistry
from gateway.services.transitions import advance


def request_hash(spec: JobSpec) -> str:
    """A stable digest of a job request, for Idempotency-Key comparison."""
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


_projects, _members = Project.__table__, Membership.__table__
_PERSONAL_PROJECT = select(_projects.c.id, _projects.c.name).where(
    _projects.c.personal_owner_id == bindparam("user_id"))
_MEMBER_PROJECT = (
    select(_projects.c.id, _projects.c.name)
    .join(_members, _members.c.project_id == _projects.c.id)
    .where(_projects.c.name == bindparam("name"), _members.c.user_id == bindparam("user_id"))
)


def _resolve_project(conn: Connection, principal: Principal, name: str | None
                     ) -> tuple[int, str]:
    """(id, name) of the project to charge: named (and the caller a member), or personal."""
    if name is None:
        row = conn.execute(_PERSONAL_PROJECT, {"user_id": principal.user_id}).first()
        if row is None:
            raise Invalid("You have no personal project; name one in 'project'.", field="project")
    else:
        row = conn.execute(_MEMBER_PROJECT, {"name": name, "user_id": principal.user_id}).first()
        if row is None:
            # Same answer for "no such project" and "not yours": names are not an oracle.
            raise Invalid(f"You are not a member of a project named '{name}'.",
                          field="project")
    return row.id, row.name


def _choose_site(session: Session, registry: SiteRegistry, spec: JobSpec,
                 username: str | None) -> str:
    admission = registry.admission(session)
    if spec.site != "auto":
        entry = registry.get(spec.site)
        if not admission.get(entry.name, Admission(False, False)).enabled:
            raise Invalid(f"Site '{entry.name}' is disabled.", field="site")
        entry.adapter_for(username)  # NoAccount (422) on a mapped site without one
        reason = unfit_reason(spec, entry.shape)
        if reason:
            raise Invalid(f"No site can run this job: {reason}.", field="resources")
        return entry.name
    reasons = []
    for entry in registry:
        if not admission.get(entry.name, Admission(False, False)).accepting:
            reasons.append(f"site '{entry.name}' is not accepting jobs")
            continue
        if not entry.serves(username):
            reasons.append(f"site '{entry.name}' has no account for you")
            continue
        reason = unfit_reason(spec, entry.shape)
        if reason is None:
            return entry.name
        reasons.append(reason)
    raise Invalid("No site can run this job: " + ("; ".join(reasons) or "no sites") + ".",
                  field="resources")


def submit(
    session: Session,
    registry: SiteRegistry,
    principal: Principal,
    spec: JobSpec,
    idempotency_key: str | None = None,
    limits: StagingLimits | None = None,
) -> tuple[JobRow, bool]:
    """Accept a job. Returns (job row, created); a replayed Idempotency-Key returns the
    original job with created=False. Inputs are checked against `limits` (if given)."""
    digest = request_hash(spec) if idempotency_key else ""
    if idempotency_key:
        replay = _replayed(session, principal, idempotency_key, digest)
        if replay is not None:
            return replay, False
    # Core statements on the session's connection: this is the hottest write, and the
    # ORM's bookkeeping costs more than the statements themselves.
    conn = session.connection()
    project_id, project_name = _resolve_project(conn, principal, spec.project)
    site = _choose_site(session, registry, spec, principal.account_name)
    if spec.inputs:
        check_inputs(session, registry, limits or StagingLimits.unlimited(), principal.user_id,
                     spec)
    now = utcnow()
    job: JobRecord = {
        "id": str(uuid.uuid4()), "owner_id": principal.user_id, "project_id": project_id,
        "name": spec.name, "spec": spec.model_dump(mode="json"),
        "state": JobState.ACCEPTED.value, "state_reason": None, "raw_state": None,
        "site_name": site, "exit_code": None, "cancel_requested": False,
        "created_at": now, "updated_at": now, "started_at": None, "finished_at": None,
    }
    event = {"job_id": job["id"], "at": now, "from_state": None,
             "to_state": JobState.ACCEPTED.value, "reason": f"submitted to site '{site}'",
             "actor": principal.display, "raw_state": None}
    labels = [{"job_id": job["id"], "key": k, "value": v} for k, v in spec.labels.items()]
    try:
        # A savepoint only when a concurrent twin request could collide on the key.
        with conn.begin_nested() if idempotency_key else nullcontext():
            conn.execute(insert(Job), [job])
            conn.execute(insert(Event), [event])
            if labels:
                conn.execute(insert(JobLabel), labels)
            if idempotency_key:
                conn.execute(insert(IdempotencyKey), [{
                    "owner_id": principal.user_id, "key": idempotency_key,
                    "request_hash": digest, "job_id": job["id"], "created_at": now}])
    except IntegrityError:
        if not idempotency_key:
            raise
        # A concurrent request with the same key won the race: answer as it did.
        replay = _replayed(session, principal, idempotency_key, digest)
        assert replay is not None
        return replay, False
    return {**job, "project_name": project_name, "owner_name": principal.display}, True


def _replayed(
    session: Session, principal: Principal, key: str, digest: str
) -> JobRow | None:
    row = session.get(IdempotencyKey, (principal.user_id, key))
    if row is None:
        return None
    if row.request_hash != digest:
        raise Invalid("This Idempotency-Key was already used with a different request body; "
                      "use a new key for a new job.", field="Idempotency-Key")
    return job_detail(session.connection(), principal, row.job_id)[0]


def cancel(session: Session, principal: Principal, job_id: str) -> JobRow:
    """Cancel now if nothing was submitted yet; otherwise ask the worker to."""
    ensure_visible(session.connection(), principal, job_id)
    job = session.get(Job, job_id, with_for_update=True)
    assert job is not None
    if job.owner_id != principal.user_id and not principal.has_role("admin"):
        raise Forbidden("Only the job's owner can cancel it.")
    state = JobState(job.state)
    if state.is_final:
        raise Conflict(f"Job {job.id} is already {state.value}; there is nothing to cancel.")
    if state is JobState.STAGING_OUT:
        raise Conflict(f"Job {job.id} has finished running; its outputs are being collected "
                       "and it ends on its own shortly.")
    if state is JobState.ACCEPTED:
        advance(session, job, JobState.CANCELLED, actor=principal.display,
                reason=Reason.CANCELLED_BY_USER)
    else:
        job.cancel_requested = True
        job.updated_at = utcnow()
    session.flush()
    return job_detail(session.connection(), principal, job_id)[0]
