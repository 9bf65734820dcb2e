"""Jobs as a user sees them: submit, list, show, cancel, events. Services flush; the
boundary (route or worker step) commits."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Select, and_, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from gateway.auth.principal import Principal
from gateway.db.base import utcnow
from gateway.db.models import (
    Attempt,
    Event,
    IdempotencyKey,
    Job,
    JobLabel,
    Membership,
    Project,
    Site,
    User,
)
from gateway.domain.errors import Conflict, Forbidden, Invalid, NotFound
from gateway.domain.jobspec import JobSpec
from gateway.domain.states import JobState, Reason
from gateway.scheduling.feasibility import unfit_reason
from gateway.services.sites import SiteRegistry
from gateway.services.transitions import advance

READ_ALL_ROLES = ("auditor", "admin")


@dataclass(frozen=True)
class JobFilter:
    state: JobState | None = None
    site: str | None = None
    project: str | None = None
    labels: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class JobView:
    """A job with the names a person wants to see beside it."""

    job: Job
    project: str
    owner: str


@dataclass(frozen=True)
class JobPage:
    jobs: Sequence[JobView]
    next_cursor: str | None


def request_hash(spec: JobSpec) -> str:
    """A stable digest of a job request, for Idempotency-Key comparison."""
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _resolve_project(session: Session, principal: Principal, name: str | None) -> Project:
    if name is None:
        project = session.scalar(
            select(Project).where(Project.personal_owner_id == principal.user_id)
        )
        if project is None:
            raise Invalid("You have no personal project; name one in 'project'.", field="project")
        return project
    project = session.scalar(select(Project).where(Project.name == name))
    if project is None or session.get(Membership, (project.id, principal.user_id)) is None:
        # Same answer for "no such project" and "not yours": names are not an oracle.
        raise Invalid(f"You are not a member of a project named '{name}'.", field="project")
    return project


def _choose_site(session: Session, registry: SiteRegistry, spec: JobSpec) -> str:
    rows = {s.name: s for s in session.scalars(select(Site))}
    if spec.site != "auto":
        entry = registry.get(spec.site)
        row = rows.get(entry.name)
        if row is None or not row.enabled:
            raise Invalid(f"Site '{entry.name}' is disabled.", field="site")
        reason = unfit_reason(spec, entry.shape)
        if reason:
            raise Invalid(f"No site can run this job: {reason}.", field="resources")
        return entry.name
    reasons = []
    for entry in registry:
        row = rows.get(entry.name)
        if row is None or not row.enabled or row.drained:
            reasons.append(f"site '{entry.name}' is not accepting jobs")
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
) -> tuple[JobView, bool]:
    """Accept a job. Returns (view, created); a replayed Idempotency-Key returns the
    original job with created=False."""
    digest = request_hash(spec) if idempotency_key else ""
    if idempotency_key:
        replay = _replayed(session, principal, idempotency_key, digest)
        if replay is not None:
            return replay, False
    project = _resolve_project(session, principal, spec.project)
    site = _choose_site(session, registry, spec)
    now = utcnow()
    job = Job(
        id=str(uuid.uuid4()),
        owner_id=principal.user_id,
        project_id=project.id,
        name=spec.name,
        spec=spec.model_dump(mode="json"),
        state=JobState.ACCEPTED.value,
        site_name=site,
        created_at=now,
        updated_at=now,
    )
    job.labels = [JobLabel(key=k, value=v) for k, v in spec.labels.items()]
    event = Event(job_id=job.id, at=now, from_state=None, to_state=JobState.ACCEPTED.value,
                  reason=f"submitted to site '{site}'", actor=principal.display)
    # Flush the job first: events and keys reference it, and the unit of work only
    # orders inserts along relationships.
    if not idempotency_key:
        session.add(job)
        session.flush()
        session.add(event)
    else:
        try:
            with session.begin_nested():
                session.add(job)
                session.flush()
                session.add_all([event, IdempotencyKey(
                    owner_id=principal.user_id, key=idempotency_key, request_hash=digest,
                    job_id=job.id)])
        except IntegrityError:
            # A concurrent request with the same key won the race: answer as it did.
            replay = _replayed(session, principal, idempotency_key, digest)
            assert replay is not None
            return replay, False
    session.flush()
    return JobView(job, project.name, principal.display), True


def _replayed(
    session: Session, principal: Principal, key: str, digest: str
) -> JobView | None:
    row = session.get(IdempotencyKey, (principal.user_id, key))
    if row is None:
        return None
    if row.request_hash != digest:
        raise Invalid("This Idempotency-Key was already used with a different request body; "
                      "use a new key for a new job.", field="Idempotency-Key")
    return get_job(session, principal, row.job_id)


def _visible(principal: Principal) -> Select[Job, str, str]:
    owner_name = func.coalesce(User.username, User.subject)
    query = (
        select(Job, Project.name, owner_name)
        .join(Project, Project.id == Job.project_id)
        .join(User, User.id == Job.owner_id)
    )
    if not any(principal.has_role(r) for r in READ_ALL_ROLES):
        query = query.where(Job.owner_id == principal.user_id)
    return query


def get_job(
    session: Session, principal: Principal, job_id: str, *, lock: bool = False
) -> JobView:
    """The job if the principal may see it; NotFound otherwise (never Forbidden)."""
    try:
        uuid.UUID(job_id)
    except ValueError:
        raise NotFound(f"No job with id '{job_id}'.") from None
    query = _visible(principal).where(Job.id == job_id)
    if lock:
        query = query.with_for_update(of=Job)
    row = session.execute(query).one_or_none()
    if row is None:
        raise NotFound(f"No job with id '{job_id}'.")
    job, project, owner = row
    return JobView(job, project, owner)


def _encode_cursor(job: Job) -> str:
    raw = json.dumps([job.created_at.isoformat(), job.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        created, job_id = json.loads(raw)
        return datetime.fromisoformat(created), str(job_id)
    except (ValueError, TypeError) as exc:
        raise Invalid("The cursor is not one this API returned; start again without it.",
                      field="cursor") from exc


def list_jobs(
    session: Session, principal: Principal, filters: JobFilter, *, limit: int,
    cursor: str | None,
) -> JobPage:
    """The principal's jobs, newest first, one page at a time (keyset pagination)."""
    query = _visible(principal)
    if filters.state is not None:
        query = query.where(Job.state == filters.state.value)
    if filters.site is not None:
        query = query.where(Job.site_name == filters.site)
    if filters.project is not None:
        query = query.where(Project.name == filters.project)
    for key, value in filters.labels:
        query = query.where(
            select(JobLabel.job_id)
            .where(JobLabel.job_id == Job.id, JobLabel.key == key, JobLabel.value == value)
            .exists()
        )
    if cursor:
        created, job_id = _decode_cursor(cursor)
        query = query.where(or_(Job.created_at < created,
                                and_(Job.created_at == created, Job.id < job_id)))
    rows = session.execute(query.order_by(Job.created_at.desc(), Job.id.desc())
                           .limit(limit + 1)).all()
    views = [JobView(job, project, owner) for job, project, owner in rows]
    next_cursor = _encode_cursor(views[limit - 1].job) if len(views) > limit else None
    return JobPage(views[:limit], next_cursor)


def cancel(session: Session, principal: Principal, job_id: str) -> JobView:
    """Cancel now if nothing was submitted yet; otherwise ask the worker to."""
    view = get_job(session, principal, job_id, lock=True)
    job = view.job
    if job.owner_id != principal.user_id and not principal.has_role("admin"):
        raise Forbidden("Only the job's owner can cancel it.")
    state = JobState(job.state)
    if state.is_final:
        raise Conflict(f"Job {job.id} is already {state.value}; there is nothing to cancel.")
    if state is JobState.ACCEPTED:
        advance(session, job, JobState.CANCELLED, actor=principal.display,
                reason=Reason.CANCELLED_BY_USER)
    else:
        job.cancel_requested = True
        job.updated_at = utcnow()
    session.flush()
    return view


def events(session: Session, principal: Principal, job_id: str) -> Sequence[Event]:
    job = get_job(session, principal, job_id).job
    return list(session.scalars(select(Event).where(Event.job_id == job.id).order_by(Event.id)))


def job_detail(session: Session, principal: Principal, job_id: str
               ) -> tuple[JobView, list[Attempt]]:
    """The job and its attempts, in one round trip (this is the hottest read)."""
    try:
        uuid.UUID(job_id)
    except ValueError:
        raise NotFound(f"No job with id '{job_id}'.") from None
    rows = session.execute(
        _visible(principal).add_columns(Attempt)
        .outerjoin(Attempt, Attempt.job_id == Job.id)
        .where(Job.id == job_id)
        .order_by(Attempt.number)
    ).all()
    if not rows:
        raise NotFound(f"No job with id '{job_id}'.")
    job, project, owner, _ = rows[0]
    return JobView(job, project, owner), [row[3] for row in rows if row[3] is not None]
