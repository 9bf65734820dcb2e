"""The audit log's entries: appending them as part of the caller's transaction, and reading
them back (with the ledger, to check it).

`append` only queues an entry on the session; the queue is written when the transaction
commits, as its last statement, in one round trip and under no lock that any other
commit takes: entries get their place in the tree later, from the sequencer
(gateway.repositories.money.audit_tree). A rolled-back transaction (or savepoint) drops
its queued entries with its changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Row, Table, event, func, insert, select
from sqlalchemy.orm import Session, SessionTransaction

from gateway.accounting.audit_entry import Entry, as_json
from gateway.db.audit_models import AuditEvent, AuditTreeNode
from gateway.db.bank_models import Allocation, LedgerEntry
from gateway.repositories import bulk

_PENDING = "gridgate.audit.pending"
_MARKS = "gridgate.audit.savepoints"
_events, _nodes = AuditEvent.__table__.c, AuditTreeNode.__table__.c
_EVENTS = cast(Table, AuditEvent.__table__)
# Up to this many entries a commit appends with one INSERT on PostgreSQL; more are
# written with COPY.
ONE_STATEMENT_MAX = 64


@dataclass(frozen=True)
class NewAuditEvent:
    """An event waiting for its transaction's commit."""

    at: datetime
    kind: str
    subject: str
    actor: str
    data: Mapping[str, Any]


def append(session: Session, kind: str, subject: str, actor: str, data: Mapping[str, Any],
           at: datetime) -> None:
    """Add an event to the log, as part of the session's transaction (written at its
    commit, dropped by its rollback)."""
    pending: list[NewAuditEvent] = session.info.setdefault(_PENDING, [])
    pending.append(NewAuditEvent(at, kind, subject, actor, data))


def posting(session: Session, kind: str, actor: str, at: datetime, txn: str,
            reason: str | None, job_id: str | None, lien_id: int | None,
            usage_id: int | None, legs: list[tuple[int, str, int]],
            seal: Mapping[str, Any]) -> None:
    """The link of one ledger transaction: what it was, its legs as (allocation, account,
    amount in milli-SU) and its `seal` (gateway.accounting.ledger_seal); about its job,
    else its (first) allocation."""
    subject = (f"job:{job_id}" if job_id else
               f"allocation:{legs[0][0]}" if legs else "ledger")
    append(session, kind, subject, actor,
           {"txn": txn, "reason": reason, "lien": lien_id, "usage": usage_id,
            "legs": [{"allocation": a, "account": account, "amount_milli": amount}
                     for a, account, amount in legs], "seal": seal}, at)


def lien(session: Session, kind: str, actor: str, at: datetime, job_id: str,
         data: Mapping[str, Any]) -> None:
    """The link of a lien taken (`kind` "lien") or released ("release"), about its job;
    `data` from `lien_data`."""
    append(session, kind, f"job:{job_id}", actor, data, at)


def lien_data(lien_id: int, allocation_id: int, amount_milli: int, reason: str
              ) -> dict[str, Any]:
    """What a lien's link records: which lien, of which allocation, how much, and why."""
    return {"lien": lien_id, "allocation": allocation_id, "amount_milli": amount_milli,
            "reason": reason}


def write(conn: Connection, events: list[NewAuditEvent]) -> None:
    """Insert `events` now, as entries not yet in the tree: under no lock that another
    commit takes (the sequencer gives them their leaf index later)."""
    rows = [{"at": e.at, "kind": e.kind, "subject": e.subject, "actor": e.actor,
             "data": as_json(e.data)} for e in events]
    if conn.dialect.name == "postgresql" and len(rows) > ONE_STATEMENT_MAX:
        # COPY (a settle step posts thousands), which takes JSON as text.
        bulk.insert_rows(conn, _EVENTS, [{**r, "data": json.dumps(r["data"])} for r in rows])
    else:
        conn.execute(insert(_EVENTS), rows)  # one INSERT of many VALUES on PostgreSQL


def entry_of(r: Row[Any]) -> Entry:
    """The entry an `audit_events` row holds."""
    return Entry(r.id, r.seq, r.at, r.kind, r.subject, r.actor, r.data)


def leaves(conn: Connection, batch: int = 1000) -> Iterator[tuple[Entry, str | None]]:
    """Every entry in the tree by leaf index, with the hash the tree recorded for its
    index (None: missing); keyset pages of `batch` (constant memory on any database)."""
    after = -1
    while True:
        rows = conn.execute(
            select(AuditEvent.__table__, _nodes.hash.label("recorded"))
            .outerjoin(AuditTreeNode, (_nodes.level == 0) & (_nodes.index == _events.seq))
            .where(_events.seq > after).order_by(_events.seq).limit(batch)).all()
        for r in rows:
            yield entry_of(r), r.recorded
        if len(rows) < batch:
            return
        after = rows[-1].seq


def leaf_index(conn: Connection, digest: str) -> int | None:
    """The leaf the tree recorded with hash `digest`, if any (only when a check has
    already failed: no index serves it)."""
    found = conn.execute(select(_nodes.index).where(_nodes.level == 0, _nodes.hash == digest)
                         .limit(1)).scalar()
    return None if found is None else int(found)


def unsequenced(conn: Connection) -> tuple[int, datetime | None]:
    """How many entries wait for the sequencer, and the oldest one's time."""
    count, oldest = conn.execute(select(func.count(), func.min(_events.at))
                                 .where(_events.seq.is_(None))).one()
    return int(count), oldest


def by_id(conn: Connection, event_id: int) -> Entry | None:
    """The entry `event_id`, if it exists."""
    r = conn.execute(select(AuditEvent.__table__).where(_events.id == event_id)).first()
    return None if r is None else entry_of(r)


def of_subject(conn: Connection, subject: str) -> list[Entry]:
    """The entries about `subject`, in the order they were written."""
    rows = conn.execute(select(AuditEvent.__table__).where(_events.subject == subject)
                        .order_by(_events.id)).all()
    return [entry_of(r) for r in rows]


@event.listens_for(Session, "before_commit")
def _write_pending(session: Session) -> None:
    pending: list[NewAuditEvent] | None = session.info.pop(_PENDING, None)
    if pending:
        # Everything else first: the entries are the commit's last statement.
        session.flush()
        write(session.connection(), pending)


@event.listens_for(Session, "after_transaction_create")
def _mark_savepoint(session: Session, transaction: SessionTransaction) -> None:
    if transaction.nested:
        marks: dict[int, int] = session.info.setdefault(_MARKS, {})
        marks[id(transaction)] = len(session.info.get(_PENDING, ()))


@event.listens_for(Session, "after_soft_rollback")
def _drop_rolled_back(session: Session, previous: SessionTransaction) -> None:
    # A savepoint rolled back: drop what was queued since it began. (Its mark stays until
    # the transaction ends: this event comes after the savepoint's after_transaction_end.)
    mark = session.info.get(_MARKS, {}).get(id(previous))
    if previous.nested and mark is not None and _PENDING in session.info:
        del session.info[_PENDING][mark:]


@event.listens_for(Session, "after_transaction_end")
def _forget(session: Session, transaction: SessionTransaction) -> None:
    # Only the outermost: a flush runs in a subtransaction of its own, neither nested nor
    # the end of anything. Committed (written already), rolled back or closed.
    if transaction.parent is None:
        session.info.pop(_PENDING, None)
        session.info.pop(_MARKS, None)

def allocations(session: Session, batch: int = 500) -> Iterator[Allocation]:
    """Every allocation by id, a page at a time (keyset: constant memory)."""
    after = 0
    while True:
        page = list(session.scalars(select(Allocation).where(Allocation.id > after)
                                    .order_by(Allocation.id).limit(batch)))
        yield from page
        if len(page) < batch:
            return
        after = page[-1].id


def unbalanced(session: Session, limit: int) -> list[tuple[str, int, int]]:
    """(txn, its sum, its first entry's id) of ledger transactions whose legs do not sum
    to zero, the first `limit` by entry id."""
    total = func.sum(LedgerEntry.amount_milli)
    rows = session.execute(
        select(LedgerEntry.txn, total, func.min(LedgerEntry.id)).group_by(LedgerEntry.txn)
        .having(total != 0).order_by(func.min(LedgerEntry.id)).limit(limit))
    return [(str(txn), int(amount), int(first)) for txn, amount, first in rows]
