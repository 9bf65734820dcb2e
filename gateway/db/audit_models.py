"""ORM models of the audit log (issue 32): its entries, and the Merkle tree over them with
the signed heads the gateway publishes (RFC 9162's model; the math is
gateway.accounting.merkle)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Index, Integer, SmallInteger, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from gateway.db.base import Base


class AuditEvent(Base):
    """One entry of the audit log. A commit writes it with no lock shared with other
    commits; the sequencer (gateway.repositories.money.audit_tree) later gives it its
    place in the tree, `seq`, and only from then on can it not change unnoticed."""

    __tablename__ = "audit_events"
    __table_args__ = (
        Index("ix_audit_events_seq", "seq", unique=True),
        # The sequencer's queue: entries not in the tree yet.
        Index("ix_audit_events_unsequenced", "id", postgresql_where="seq IS NULL",
              sqlite_where="seq IS NULL"),
    )

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    at: Mapped[datetime] = mapped_column()
    kind: Mapped[str] = mapped_column(String(32))
    # What the event is about: "job:<uuid>", "allocation:<id>", "project:<id>", ...
    subject: Mapped[str] = mapped_column(String(80), index=True)
    actor: Mapped[str] = mapped_column(String(255))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    # Its leaf index in the tree; None until the sequencer has taken it in.
    seq: Mapped[int | None] = mapped_column(BigInteger, default=None)


class AuditTreeNode(Base):
    """The hash (hex) of one perfect subtree of the tree: level 0 holds the leaves'
    hashes as they were when taken in, level k the subtree of 2**k leaves from
    index * 2**k. What proofs are built from."""

    __tablename__ = "audit_tree_nodes"

    level: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    index: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    hash: Mapped[str] = mapped_column(String(64))


class AuditTreeHead(Base):
    """A signed tree head: the tree's root when it had `size` leaves, signed by the
    gateway's key (a compact JWS over size, root and time)."""

    __tablename__ = "audit_tree_heads"

    size: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    at: Mapped[datetime] = mapped_column()
    root: Mapped[str] = mapped_column(String(64))
    signature: Mapped[str] = mapped_column(Text)
