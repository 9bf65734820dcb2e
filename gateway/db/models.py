"""ORM models. Every change here ships with an Alembic revision."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Enum,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column, relationship

from gateway.db.audit_models import (  # noqa: F401  (registers the audit log's tables too)
    AuditEvent,
    AuditTreeHead,
    AuditTreeNode,
)
from gateway.db.bank_models import (  # noqa: F401  (registers the bank's tables too)
    Allocation,
    LedgerEntry,
    Lien,
    Quote,
    RateCard,
    UsageRow,
)
from gateway.db.base import Base, utcnow
from gateway.db.job_relation_models import (  # noqa: F401  (registers their tables too)
    JobArray,
    JobDependencyRow,
)
from gateway.db.mail_models import (  # noqa: F401  (registers their tables too)
    MailCursor,
    MailRequest,
    MailSent,
)
from gateway.db.origin_models import (  # noqa: F401  (registers its table too)
    OriginDocument,
)
from gateway.db.webhook_models import (  # noqa: F401  (registers their tables too)
    Webhook,
    WebhookDelivery,
)
from gateway.db.workflow_models import (  # noqa: F401  (registers their tables too)
    Workflow,
    WorkflowEvent,
    WorkflowStep,
)
from gateway.domain.states import AttemptState
from gateway.schemas.events import JOB_STATE_TYPE


class User(Base):
    """A person or service principal, identified by (issuer, subject)."""

    __tablename__ = "users"
    __table_args__ = (UniqueConstraint("issuer", "subject"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    issuer: Mapped[str] = mapped_column(String(512))
    subject: Mapped[str] = mapped_column(String(255))
    # Local (built-in issuer) users log in with a username and password.
    username: Mapped[str | None] = mapped_column(String(64), unique=True)
    password_hash: Mapped[str | None] = mapped_column(String(255))
    display_name: Mapped[str | None] = mapped_column(String(255))
    # The address the identity provider gave with `email_verified` true (job mail).
    email: Mapped[str | None] = mapped_column(String(254), default=None)
    roles: Mapped[list[str]] = mapped_column(JSON, default=list)
    disabled: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Project(Base):
    """Who pays: jobs are charged to a project."""

    __tablename__ = "projects"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    description: Mapped[str | None] = mapped_column(Text)
    # The user whose personal project this is, if any.
    personal_owner_id: Mapped[str | None] = mapped_column(
        ForeignKey("users.id"), unique=True, default=None
    )
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Membership(Base):
    __tablename__ = "memberships"

    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    # "member" submits and sees own jobs; "manager" also sees the project's jobs.
    role: Mapped[str] = mapped_column(String(16), default="member")


class Site(Base):
    """A cluster the gateway can submit to. `config` is the validated site config."""

    __tablename__ = "sites"

    name: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    drained: Mapped[bool] = mapped_column(Boolean, default=False)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    state: Mapped[str] = mapped_column(String(16), default="unknown")
    reason: Mapped[str | None] = mapped_column(Text)
    # When `state` last changed value (failover counts how long a site has been down).
    state_since: Mapped[datetime | None] = mapped_column(default=None)
    # How busy the site was at its last queue snapshot (gateway.services.routing.site_load), and
    # when that snapshot was taken; null until a routing pass took one.
    load: Mapped[dict[str, Any] | None] = mapped_column(JSON, default=None)
    load_at: Mapped[datetime | None] = mapped_column(default=None)
    # When an admin last lifted a black-hole ban here: attempts that ended by then no
    # longer count toward one (gateway.scheduling.black_holes).
    ban_lifted_at: Mapped[datetime | None] = mapped_column(default=None)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow, onupdate=utcnow)


class Job(Base):
    """A user's request and where it stands."""

    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_owner_created", "owner_id", "created_at", "id"),
        Index("ix_jobs_state_site", "state", "site_name"),
        Index("ix_jobs_array", "array_job_id", "array_index"),
        # Few jobs are gated at any time: only they are indexed.
        Index("ix_jobs_gate", "gate", postgresql_where=text("gate IS NOT NULL"),
              sqlite_where=text("gate IS NOT NULL")),
        # A TES listing reads one owner's jobs of one origin, newest first; the gateway's
        # own jobs (origin NULL, nearly all) are left out of it.
        Index("ix_jobs_owner_origin_created", "owner_id", "origin", "created_at", "id",
              postgresql_where=text("origin IS NOT NULL"),
              sqlite_where=text("origin IS NOT NULL")),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"), index=True)
    name: Mapped[str] = mapped_column(String(255))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    raw_state: Mapped[str | None] = mapped_column(String(64))
    site_name: Mapped[str | None] = mapped_column(ForeignKey("sites.name"))
    exit_code: Mapped[int | None] = mapped_column(Integer)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    # Held by its owner (`gridgate hold`): while ACCEPTED, no routing pass places it and
    # no worker claims it, until it is released.
    held: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # What else keeps it ACCEPTED (gateway.domain.job_relations.Gate): its dependencies
    # or its array's throttle; None: nothing.
    gate: Mapped[str | None] = mapped_column(String(16), default=None)
    # A task of a job array: the array and the task's index in it.
    array_job_id: Mapped[str | None] = mapped_column(ForeignKey("job_arrays.id"), default=None)
    array_index: Mapped[int | None] = mapped_column(Integer, default=None)
    # The door it came in by (gateway.domain.job_origin): NULL the gateway's own API.
    origin: Mapped[str | None] = mapped_column(String(16), default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(default=None)
    ended_at: Mapped[datetime | None] = mapped_column(default=None)
    # The attempt that started first: the job's run. Any other attempt of the job (a
    # hedge or failover sibling) is revoked. Set once, under the job's row lock.
    winner_attempt_id: Mapped[int | None] = mapped_column(Integer, default=None)

    labels: Mapped[list[JobLabel]] = relationship(lazy="raise", cascade="all, delete-orphan")


class JobLabel(Base):
    __tablename__ = "job_labels"
    __table_args__ = (Index("ix_job_labels_key_value", "key", "value"),)

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[str] = mapped_column(String(255))


class JobTarget(Base):
    """A further site a job is to be submitted to besides `Job.site_name`: a hedge
    (routing chose several) or a failover (its site went down before the job started).
    Claimed once, by the worker that creates the attempt there."""

    __tablename__ = "job_targets"

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    site_name: Mapped[str] = mapped_column(ForeignKey("sites.name"), primary_key=True)
    reason: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    claimed_at: Mapped[datetime | None] = mapped_column(default=None)


class Attempt(Base):
    """One submission of a job to one site."""

    __tablename__ = "attempts"
    __table_args__ = (
        UniqueConstraint("job_id", "number"),
        Index("ix_attempts_site_state", "site_name", "state"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    site_name: Mapped[str] = mapped_column(ForeignKey("sites.name"))
    # The scheduler job carries this tag, so a lost submit reply can be adopted later.
    tag: Mapped[str] = mapped_column(String(64))
    native_id: Mapped[str | None] = mapped_column(String(64))
    # SUBMITTING until the scheduler's id is recorded, then the attempt's job state.
    # A VARCHAR(16) holding the enum's values, as before it was typed: no migration.
    state: Mapped[AttemptState] = mapped_column(
        Enum(AttemptState, native_enum=False, length=16, validate_strings=True,
             values_callable=lambda states: [s.value for s in states]))
    raw_state: Mapped[str | None] = mapped_column(String(64))
    reason: Mapped[str | None] = mapped_column(Text)
    exit_code: Mapped[int | None] = mapped_column(Integer)
    # A job of several steps (a container's `then`): each step's exit code, in order,
    # comma-separated ("0,3,0"), as stage-out read them; NULL for one program.
    step_exit_codes: Mapped[str | None] = mapped_column(Text, default=None)
    workdir: Mapped[str] = mapped_column(Text)
    lease_until: Mapped[datetime | None] = mapped_column(default=None)
    # The worker holding the lease (submitting, staging in or staging out): a worker
    # renews it between transfers and submits only while it still holds it.
    lease_owner: Mapped[str | None] = mapped_column(String(255), default=None)
    cancel_sent_at: Mapped[datetime | None] = mapped_column(default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    submitted_at: Mapped[datetime | None] = mapped_column(default=None)
    started_at: Mapped[datetime | None] = mapped_column(default=None)
    ended_at: Mapped[datetime | None] = mapped_column(default=None)
    # The predicted start last announced for this attempt while it waits in its site's
    # queue (an `org.gridgate.job.prediction` event); None: only its placement's.
    predicted_start: Mapped[datetime | None] = mapped_column(default=None)


class Event(Base):
    """The event log, append-only: every state change of a job (`type` JOB_STATE_TYPE,
    with who and why: the job's history), and the other facts the gateway pushes
    (gateway.schemas.events), each written in the transaction of the change it reports.
    Other types carry `data`, and `subject` and `project_id` when not about a job."""

    __tablename__ = "events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    type: Mapped[str] = mapped_column(String(48), server_default=JOB_STATE_TYPE)
    job_id: Mapped[str | None] = mapped_column(ForeignKey("jobs.id"), index=True)
    # What a fact not about a job is about: "site:<name>", "allocation:<id>".
    subject: Mapped[str | None] = mapped_column(String(80))
    project_id: Mapped[int | None] = mapped_column(ForeignKey("projects.id"))
    # Whose a fact not about a job is (a workflow's owner), for who may read it.
    owner_id: Mapped[str | None] = mapped_column(ForeignKey("users.id"))
    at: Mapped[datetime] = mapped_column(default=utcnow)
    from_state: Mapped[str | None] = mapped_column(String(16))
    to_state: Mapped[str | None] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text)
    actor: Mapped[str] = mapped_column(String(255))
    raw_state: Mapped[str | None] = mapped_column(String(64))
    data: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # When the row was written (its transaction's start, the database's clock), unlike
    # `at` (when the change happened, which a site may report late): how a resumed
    # stream tells what may have committed after the reader's last event.
    recorded_at: Mapped[datetime | None] = mapped_column(
        server_default=text("CURRENT_TIMESTAMP"))


class IdempotencyKey(Base):
    """Remembers which job a client's `Idempotency-Key` created, and for which body."""

    __tablename__ = "idempotency_keys"

    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id"), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    request_hash: Mapped[str] = mapped_column(String(64))
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class OAuthClient(Base):
    """A client of the built-in authorization server (the CLI, or an automation)."""

    __tablename__ = "oauth_clients"

    client_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    # None for public clients (the CLI), which use the device flow.
    secret_hash: Mapped[str | None] = mapped_column(String(255))
    name: Mapped[str] = mapped_column(String(255))
    grant_types: Mapped[list[str]] = mapped_column(JSON, default=list)
    scopes: Mapped[list[str]] = mapped_column(JSON, default=list)
    # Client-credentials tokens act as this user.
    user_id: Mapped[str | None] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class DeviceCode(Base):
    """A pending RFC 8628 device authorization."""

    __tablename__ = "device_codes"

    # sha256 of the device code: a database leak does not leak live codes.
    device_code_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_code: Mapped[str] = mapped_column(String(16), unique=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("oauth_clients.client_id"))
    scope: Mapped[str] = mapped_column(Text)
    expires_at: Mapped[datetime] = mapped_column()
    interval: Mapped[int] = mapped_column(Integer)
    last_polled_at: Mapped[datetime | None] = mapped_column(default=None)
    # pending -> approved | denied -> used
    status: Mapped[str] = mapped_column(String(16), default="pending")
    user_id: Mapped[str | None] = mapped_column(ForeignKey("users.id"))


class RefreshToken(Base):
    """A refresh token (stored hashed), rotated on every use."""

    __tablename__ = "refresh_tokens"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    client_id: Mapped[str] = mapped_column(ForeignKey("oauth_clients.client_id"))
    user_id: Mapped[str] = mapped_column(ForeignKey("users.id"), index=True)
    scope: Mapped[str] = mapped_column(Text)
    issued_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column()
    revoked_at: Mapped[datetime | None] = mapped_column(default=None)


class RevokedAccessToken(Base):
    """An access token of the built-in issuer refused before it expires (its dashboard
    session was signed out), by its `jti`; kept until the token would have expired
    anyway, when its own `exp` refuses it."""

    __tablename__ = "revoked_access_tokens"

    jti: Mapped[str] = mapped_column(String(64), primary_key=True)
    expires_at: Mapped[datetime] = mapped_column(index=True)


class Upload(Base):
    """A file a user sends to the gateway store in chunks, finalized by its sha256.

    While `open`, the bytes live in `uploads/<id>.part`; once `complete`, the content
    is the blob `blobs/<sha256[:2]>/<sha256>` (shared by every upload of that content).
    """

    __tablename__ = "uploads"
    __table_args__ = (
        Index("ix_uploads_owner_state", "owner_id", "state"),
        Index("ix_uploads_state_expires", "state", "expires_at"),
    )

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    owner_id: Mapped[str] = mapped_column(ForeignKey("users.id"))
    name: Mapped[str] = mapped_column(String(255))
    size: Mapped[int] = mapped_column(BigInteger)
    # What the client promised at creation; finalizing needs it (given then, or now).
    expected_sha256: Mapped[str | None] = mapped_column(String(64), default=None)
    bytes_received: Mapped[int] = mapped_column(BigInteger, default=0)
    # open | complete | expired
    state: Mapped[str] = mapped_column(String(16), default="open")
    sha256: Mapped[str | None] = mapped_column(String(64), index=True, default=None)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[datetime] = mapped_column()
    completed_at: Mapped[datetime | None] = mapped_column(default=None)


class JobOutput(Base):
    """A file a job left that matched its output globs, with its size and sha256.

    `location` says where the bytes are: `gateway` (the blob `sha256` in the gateway
    store, fetched and verified) or `site` (kept at `site_path` in the job directory).
    """

    __tablename__ = "job_outputs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    # Relative to the job directory, as matched.
    path: Mapped[str] = mapped_column(Text)
    size: Mapped[int] = mapped_column(BigInteger)
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    location: Mapped[str] = mapped_column(String(16))
    site_name: Mapped[str] = mapped_column(ForeignKey("sites.name"))
    site_path: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class LoginFailure(Base):
    """One failed attempt at a sign-in point, one row per key it counts against: the
    account (`user:<name>`), the user code (`code:<code>`), the OAuth client
    (`client:<id>`), the client address (`addr:<ip>`). In the database, so every gateway
    process sees the same counts (gateway.auth.login_throttle)."""

    __tablename__ = "login_failures"
    __table_args__ = (Index("ix_login_failures_key_at", "key", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    key: Mapped[str] = mapped_column(String(128))
    at: Mapped[datetime] = mapped_column(index=True)


class Placement(Base):
    """One routing decision for a job, as it was made: the policy, the chosen sites (best
    first), the sentence saying why, and every candidate site with its exclusion or its
    forecast (`gateway.schemas.placements.CandidateOut`, as JSON)."""

    __tablename__ = "placements"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    decided_at: Mapped[datetime] = mapped_column()
    policy: Mapped[str] = mapped_column(String(16))
    hedge: Mapped[int] = mapped_column(Integer)
    deadline: Mapped[datetime | None] = mapped_column(default=None)
    chosen: Mapped[list[str]] = mapped_column(JSON)
    why: Mapped[str] = mapped_column(Text)
    candidates: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    # The job's home when the decision placed it elsewhere (None: it stayed, or had no
    # home), and the processor-seconds it was predicted to hold at its first choice:
    # the guest ledger's entry (gateway.scheduling.guest_ledger), rebuilt from these.
    guest_of: Mapped[str | None] = mapped_column(String(64), default=None)
    guest_work: Mapped[int | None] = mapped_column(BigInteger, default=None)


class ImportedWait(Base):
    """A queue wait from a site's own records (an SWF log, a sacct or qacct dump),
    imported to start the site's wait history before the gateway observed any."""

    __tablename__ = "imported_waits"
    __table_args__ = (Index("ix_imported_waits_started_at", "started_at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    site_name: Mapped[str] = mapped_column(ForeignKey("sites.name"))
    queue: Mapped[str] = mapped_column(String(64))
    procs: Mapped[int] = mapped_column(Integer)
    time_limit_seconds: Mapped[float | None] = mapped_column(Float)
    user: Mapped[str | None] = mapped_column(String(255))
    wait_seconds: Mapped[float] = mapped_column(Float)
    started_at: Mapped[datetime] = mapped_column()
    source: Mapped[str] = mapped_column(String(255))
