"""The audit documents: the outcome of checking the log and the ledger
(GET /audit/verify), the log's signed tree heads and proofs, and one job's story from
request to charge (GET /audit/jobs/{id}).
Amounts are integer milli-SU (1 SU = 1000), as the ledger keeps them."""

from __future__ import annotations

from datetime import datetime

from typing_extensions import TypedDict

from gateway.schemas.jobs import AttemptOut, EventOut


class AuditBreakOut(TypedDict):
    """Where the log first stops holding: the entry (None: no one entry) and what is
    wrong."""

    event_id: int | None
    fault: str  # edited, deleted, reordered, rewritten, truncated, added, forged_head
    detail: str


# The JWS `typ` of a signed tree head: never taken for an access token, nor one for it.
TREE_HEAD_TYPE = "gridgate-tree-head+jwt"


class TreeHeadOut(TypedDict):
    """A signed tree head: the Merkle root (RFC 9162, hex) of the log's first `size`
    entries, and the gateway's signature over size, root and time: a compact JWS
    (RS256, typ gridgate-tree-head+jwt) by the key published at /.well-known/jwks.json."""

    size: int
    at: datetime
    root: str
    signature: str


class ConsistencyOut(TypedDict):
    """RFC 9162's proof (hex hashes) that the signed tree of `first` entries is a prefix
    of the signed tree of `second`."""

    first: int
    second: int
    proof: list[str]


class LedgerDifferenceOut(TypedDict):
    """A ledger transaction that differs from the log: its id, time and kind, the entry
    that records it (None: no entry does) and what is wrong."""

    txn: str
    at: datetime
    kind: str
    event_id: int | None
    detail: str


class LedgerSealsOut(TypedDict):
    """The ledger's transactions against the entries that record them."""

    # Transactions whose legs, read from the ledger's rows, match their entry's seal.
    bound: int
    # Transactions recorded by entries written before the ledger was bound to the log
    # (no seal): checked against the allocations' sums only.
    unbound: int
    # Sealed transactions whose legs differ from their seal, and transactions no entry
    # records; the first of them, in entry order (then by ledger entry).
    differ: int
    first: LedgerDifferenceOut | None


class AuditVerifyOut(TypedDict):
    """The whole log walked against every signed head, and the ledger checked against
    the log and the allocations' sums."""

    ok: bool
    checked_at: datetime
    # Entries that hold, in leaf order, up to where the log first stops holding.
    events: int
    # The newest signed head (None: nothing entered the tree yet).
    head: TreeHeadOut | None
    # Entries committed but not yet in the tree (the sequencer takes them in within
    # about `audit_head_seconds` while a worker runs), and the oldest one's time.
    pending: int
    oldest_pending_at: datetime | None
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
    """One entry of the audit log about the job. An entry that records two things (on
    PostgreSQL a submission's state change and its lien, written by one statement) is
    told once for each, with the same id. `entry` is the canonical text its leaf hash
    covers (SHA-256 of 0x00 and it); `leaf` its index in the tree and `proof` its
    inclusion proof (hex, leaf end first) in the story's `tree_head`; both None while the
    entry waits for the sequencer."""

    id: int
    at: datetime
    kind: str
    actor: str
    entry: str
    leaf: int | None
    proof: list[str] | None


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
    # The newest signed head, which the entries' proofs lead to.
    tree_head: TreeHeadOut | None


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
