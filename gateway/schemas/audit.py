"""The audit documents: the outcome of checking the chain and the ledger
(GET /audit/verify) and one job's story from request to charge (GET /audit/jobs/{id}).
Amounts are integer milli-SU (1 SU = 1000), as the ledger keeps them."""

from __future__ import annotations

from datetime import datetime

from typing_extensions import TypedDict

from gateway.schemas.jobs import AttemptOut, EventOut


class AuditBreakOut(TypedDict):
    """The first broken link: the event (None: the chain's head) and what is wrong."""

    event_id: int | None
    fault: str  # edited, deleted, reordered, truncated
    detail: str


class AuditHeadOut(TypedDict):
    last_id: int
    last_hash: str


class LedgerDifferenceOut(TypedDict):
    """A ledger transaction that differs from the chain: its id, time and kind, the link
    that records it (None: no link does) and what is wrong."""

    txn: str
    at: datetime
    kind: str
    event_id: int | None
    detail: str


class LedgerSealsOut(TypedDict):
    """The ledger's transactions against the links that record them."""

    # Transactions whose legs, read from the ledger's rows, match their link's seal.
    bound: int
    # Transactions recorded by links written before the ledger was bound to the chain
    # (no seal): checked against the allocations' sums only.
    unbound: int
    # Sealed transactions whose legs differ from their seal, and transactions no link
    # records; the first of them, in chain order (then by ledger entry).
    differ: int
    first: LedgerDifferenceOut | None


class AuditVerifyOut(TypedDict):
    """The whole chain walked, and the ledger checked against the allocations' sums."""

    ok: bool
    checked_at: datetime
    # Links that hold, from the start up to the first broken one (or all of them).
    events: int
    head: AuditHeadOut | None
    broken: AuditBreakOut | None
    allocations: int
    # Allocations whose running sums differ from their ledger, transactions not summing
    # to zero (at most a few of each).
    ledger_problems: list[str]
    ledger_seals: LedgerSealsOut


class StoryOwnerOut(TypedDict):
    """Who owns the job, as the identity provider named them."""

    username: str | None
    issuer: str
    subject: str


class StoryPlacementOut(TypedDict):
    decided_at: datetime
    policy: str
    hedge: int
    chosen: list[str]
    why: str


class StoryLienOut(TypedDict):
    id: int
    allocation_id: int
    site: str | None
    amount_milli: int
    status: str
    created_at: datetime
    closed_at: datetime | None


class StoryUsageOut(TypedDict):
    """A usage record as the site reported it (its own clock), and what it was charged."""

    site: str
    native_id: str
    run: int
    source: str
    received_at: datetime
    started_at: datetime | None
    ended_at: datetime | None
    elapsed: int
    cores: int
    state: str
    exit_code: int | None
    estimated: bool
    charged_milli: int | None
    refunded_milli: int
    rule: str | None


class StoryLedgerOut(TypedDict):
    """One ledger leg about the job (lien, charge, refund, release)."""

    at: datetime
    txn: str
    kind: str
    allocation_id: int
    account: str
    amount_milli: int
    reason: str | None
    actor: str


class StoryAuditOut(TypedDict):
    """One link of the audit chain about the job. A link that records two things (on
    PostgreSQL a submission's state change and its lien, written by one statement) is
    told once for each, with the same id."""

    id: int
    at: datetime
    kind: str
    actor: str


class JobStoryOut(TypedDict):
    """One job from request to charge, each step with its time."""

    job_id: str
    name: str
    project: str
    state: str
    created_at: datetime
    owner: StoryOwnerOut
    # Who submitted it (the first event's actor).
    requested_by: str
    events: list[EventOut]
    placements: list[StoryPlacementOut]
    attempts: list[AttemptOut]
    liens: list[StoryLienOut]
    usage: list[StoryUsageOut]
    ledger: list[StoryLedgerOut]
    audit: list[StoryAuditOut]


class StoryJobOut(TypedDict):
    """A job whose story the caller may read (GET /audit/jobs?id_prefix=...)."""

    id: str
    name: str
    state: str
    project: str
    owner: str
    created_at: datetime


class StoryJobList(TypedDict):
    """Newest first: how a client turns a short id into a job it may audit."""

    items: list[StoryJobOut]
    next_cursor: str | None
