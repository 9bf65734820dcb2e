"""ORM models of the bank (issue 13): allocations, rate cards, liens, the ledger, usage
records as received (the audit log's tables: gateway.db.audit_models). Amounts are
integer milli-SU (1 SU = 1000).

The ledger is the truth and is append-only; an allocation's `available`, `held` and
`used` columns are its running sums, written in the same transaction as the entries
(so the row lock that guards a lien is the allocation row itself) and checked against
the ledger by the tests and by `gridgate audit verify`.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base, utcnow

# The pool of an allocation that any site may draw on.
FEDERATION_POOL = "*"


class Allocation(Base):
    """Service units granted to a project, spendable at one site or the whole federation
    (`pool` = FEDERATION_POOL) between `starts_at` and `ends_at`."""

    __tablename__ = "allocations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    project_id: Mapped[int] = mapped_column(ForeignKey("projects.id"), index=True)
    pool: Mapped[str] = mapped_column(String(64))
    starts_at: Mapped[datetime] = mapped_column()
    ends_at: Mapped[datetime] = mapped_column()
    # "active" or "suspended"; "expired" is read from ends_at, never stored late.
    status: Mapped[str] = mapped_column(String(16), default="active")
    # How far `available` may go below zero (0: not at all).
    credit_limit_milli: Mapped[int] = mapped_column(BigInteger, default=0)
    # Running sums of the ledger's accounts for this allocation.
    awarded_milli: Mapped[int] = mapped_column(BigInteger, default=0)
    available_milli: Mapped[int] = mapped_column(BigInteger, default=0)
    held_milli: Mapped[int] = mapped_column(BigInteger, default=0)
    used_milli: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    created_by: Mapped[str] = mapped_column(String(255))


class RateCard(Base):
    """What a site charges, versioned: a new version never changes a quote already made."""

    __tablename__ = "rate_cards"
    __table_args__ = (UniqueConstraint("site_name", "version"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    site_name: Mapped[str] = mapped_column(ForeignKey("sites.name"))
    version: Mapped[int] = mapped_column(Integer)
    # milli-SU per core-hour: the site's charge factor x 1000.
    core_hour_milli: Mapped[int] = mapped_column(BigInteger)
    gb_hour_milli: Mapped[int] = mapped_column(BigInteger, default=0)
    gpu_hour_milli: Mapped[int] = mapped_column(BigInteger, default=0)
    node_hour_milli: Mapped[int] = mapped_column(BigInteger, default=0)
    minimum_milli: Mapped[int] = mapped_column(BigInteger, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Quote(Base):
    """What a job would cost at one site, with the rate version pinned at submit."""

    __tablename__ = "quotes"

    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    site_name: Mapped[str] = mapped_column(ForeignKey("sites.name"), primary_key=True)
    rate_card_id: Mapped[int] = mapped_column(ForeignKey("rate_cards.id"))
    amount_milli: Mapped[int] = mapped_column(BigInteger)
    quoted_at: Mapped[datetime] = mapped_column(default=utcnow)


class Lien(Base):
    """Funds of one allocation held for one job while it waits and runs: a reservation,
    outside the ledger (gateway.services.money.bank); held from `created_at` to `closed_at`."""

    __tablename__ = "liens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    job_id: Mapped[str] = mapped_column(ForeignKey("jobs.id"), index=True)
    allocation_id: Mapped[int] = mapped_column(ForeignKey("allocations.id"))
    # The site the lien was drawn for (null while an `auto` job waits for routing).
    site_name: Mapped[str | None] = mapped_column(ForeignKey("sites.name"), default=None)
    amount_milli: Mapped[int] = mapped_column(BigInteger)
    # "held" until settled (charged, rest released) or released whole.
    status: Mapped[str] = mapped_column(String(16), default="held")
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    closed_at: Mapped[datetime | None] = mapped_column(default=None)


class LedgerEntry(Base):
    """One leg of a double-entry transaction: the legs of a `txn` sum to zero.

    Accounts per allocation: `funding` (the grant's source, negative), `available`,
    `held` (liens) and `used` (charges). Append-only: nothing updates or deletes a row.
    """

    __tablename__ = "ledger_entries"
    __table_args__ = (
        Index("ix_ledger_entries_allocation_at", "allocation_id", "at"),
        # Reports as of T read the rows before (or after) T by this index alone.
        Index("ix_ledger_entries_at_cover", "at", "allocation_id", "account", "amount_milli"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    # Not indexed: nothing looks a transaction up by id on the hot path, and every index
    # is written by each submission's lien (benchmarks/accounting.py).
    txn: Mapped[str] = mapped_column(String(36))
    at: Mapped[datetime] = mapped_column()
    allocation_id: Mapped[int] = mapped_column(ForeignKey("allocations.id"))
    account: Mapped[str] = mapped_column(String(16))
    amount_milli: Mapped[int] = mapped_column(BigInteger)
    # deposit, transfer, adjustment, lien, release, charge, refund
    kind: Mapped[str] = mapped_column(String(16))
    job_id: Mapped[str | None] = mapped_column(ForeignKey("jobs.id"), index=True, default=None)
    lien_id: Mapped[int | None] = mapped_column(ForeignKey("liens.id"), default=None)
    usage_id: Mapped[int | None] = mapped_column(ForeignKey("usage_records.id"), default=None)
    reason: Mapped[str | None] = mapped_column(Text, default=None)
    actor: Mapped[str] = mapped_column(String(255))


class UsageRow(Base):
    """A scheduler's usage record as received (`adapters.usage.UsageRecord`), once per
    (site, native id, run): applying the same record twice changes nothing."""

    __tablename__ = "usage_records"
    __table_args__ = (UniqueConstraint("site_name", "native_id", "run"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    site_name: Mapped[str] = mapped_column(ForeignKey("sites.name"))
    native_id: Mapped[str] = mapped_column(String(64))
    run: Mapped[int] = mapped_column(Integer)
    job_id: Mapped[str | None] = mapped_column(ForeignKey("jobs.id"), index=True)
    source: Mapped[str] = mapped_column(String(32))
    received_at: Mapped[datetime] = mapped_column()
    # The site's own clock.
    started_at: Mapped[datetime | None] = mapped_column(default=None)
    ended_at: Mapped[datetime | None] = mapped_column(default=None)
    elapsed: Mapped[int] = mapped_column(Integer)
    cores: Mapped[int] = mapped_column(Integer)
    nodes: Mapped[int] = mapped_column(Integer)
    gpus: Mapped[int] = mapped_column(Integer, default=0)
    memory_mb: Mapped[int | None] = mapped_column(Integer, default=None)
    state: Mapped[str] = mapped_column(String(16))
    reason: Mapped[str | None] = mapped_column(Text, default=None)
    exit_code: Mapped[int | None] = mapped_column(Integer, default=None)
    raw: Mapped[str] = mapped_column(Text)
    # True when no record came by the lien's deadline and the charge was estimated.
    estimated: Mapped[bool] = mapped_column(Boolean, default=False)
    charged_milli: Mapped[int | None] = mapped_column(BigInteger, default=None)
    refunded_milli: Mapped[int] = mapped_column(BigInteger, default=0)
    # Why the charge is what it is ("failed at start: nothing charged", ...).
    rule: Mapped[str | None] = mapped_column(Text, default=None)
