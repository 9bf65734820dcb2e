"""The audit chain's rows: appending events as part of the caller's transaction, and
reading the chain (and the ledger, to check it) back in id order.

`append` only queues an event on the session; the queue is chained and written when the
transaction commits, as its last statements. So the one head row, whose lock serialises
every append, is held only for those statements and the commit itself, and it is always
the last lock a transaction takes (never one held while waiting for an allocation's).
A rolled-back transaction (or savepoint) drops its queued events with its changes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Connection, Table, event, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, SessionTransaction

from gateway.accounting.audit_chain import GENESIS, Link, as_json, link_hash
from gateway.db.bank_models import Allocation, AuditEvent, AuditHead, LedgerEntry
from gateway.repositories import bulk
from gateway.repositories.money import audit_pg

_PENDING = "gridgate.audit.pending"
_MARKS = "gridgate.audit.savepoints"
_HEAD_ID = 1
_events, _head = AuditEvent.__table__.c, AuditHead.__table__.c
_EVENTS = cast(Table, AuditEvent.__table__)
# Up to this many events a commit appends in one statement on PostgreSQL (its SQL grows
# with the batch); more are written with COPY after locking the head.
ONE_STATEMENT_MAX = 16


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
    """Add an event to the chain, as part of the session's transaction (written at its
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
    """Chain `events` after the head and insert them now, under the head's row lock
    (created, with the genesis hash, by the first append: race-safe, a concurrent
    creator's row wins and both then lock it)."""
    postgres = conn.dialect.name == "postgresql"
    if postgres and len(events) <= ONE_STATEMENT_MAX:
        batch = [(e.at, e.kind, e.subject, e.actor, e.data) for e in events]
        while not audit_pg.write(conn, batch, _HEAD_ID):
            _create_head(conn)
        return
    # A batch (a settle step posts thousands), or SQLite (whose writer holds the
    # database's lock from BEGIN IMMEDIATE, and where statements cost no round trip).
    query = select(_head.last_hash).where(_head.id == _HEAD_ID).with_for_update()
    prev = conn.execute(query).scalar()
    if prev is None:
        _create_head(conn)
        prev = conn.execute(query).scalar_one()
    # Drawn under the lock, so ids grow along the chain.
    ids = bulk.reserve_ids(conn, _EVENTS, len(events))
    rows = []
    for event_id, e in zip(ids, events, strict=True):
        data = as_json(e.data)
        digest = link_hash(prev, e.at, e.kind, e.subject, e.actor, data)
        rows.append({"id": event_id, "at": e.at, "kind": e.kind, "subject": e.subject,
                     "actor": e.actor, "data": json.dumps(data) if postgres else data,
                     "prev_hash": prev, "hash": digest})
        prev = digest
    bulk.insert_rows(conn, _EVENTS, rows)
    conn.execute(update(AuditHead).where(AuditHead.id == _HEAD_ID)
                 .values(last_id=ids[-1], last_hash=prev))


def _create_head(conn: Connection) -> None:
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    conn.execute(dialect.insert(AuditHead).values(id=_HEAD_ID, last_id=0, last_hash=GENESIS)
                 .on_conflict_do_nothing())


def head(conn: Connection) -> tuple[int, str] | None:
    """The stored (last id, last hash), or None when nothing was ever appended."""
    row = conn.execute(select(_head.last_id, _head.last_hash)
                       .where(_head.id == _HEAD_ID)).first()
    return None if row is None else (int(row.last_id), str(row.last_hash))


def links(conn: Connection, batch: int = 1000) -> Iterator[Link]:
    """Every event in id order, read `batch` rows at a time (keyset pages: constant memory
    on any database, no server-side cursor needed)."""
    after = 0
    while True:
        rows = conn.execute(select(AuditEvent.__table__).where(_events.id > after)
                            .order_by(_events.id).limit(batch)).all()
        for r in rows:
            yield Link(r.id, r.at, r.kind, r.subject, r.actor, r.data, r.prev_hash, r.hash)
        if len(rows) < batch:
            return
        after = rows[-1].id


def find(conn: Connection, digest: str) -> int | None:
    """The id of the event whose hash is `digest`, if any."""
    found = conn.execute(select(_events.id).where(_events.hash == digest)).scalar()
    return None if found is None else int(found)


def by_id(conn: Connection, event_id: int) -> Link | None:
    """The event `event_id`, if it exists."""
    r = conn.execute(select(AuditEvent.__table__).where(_events.id == event_id)).first()
    return None if r is None else Link(r.id, r.at, r.kind, r.subject, r.actor, r.data,
                                       r.prev_hash, r.hash)


def of_subject(conn: Connection, subject: str) -> list[Link]:
    """The events about `subject`, in chain order."""
    rows = conn.execute(select(AuditEvent.__table__).where(_events.subject == subject)
                        .order_by(_events.id)).all()
    return [Link(r.id, r.at, r.kind, r.subject, r.actor, r.data, r.prev_hash, r.hash)
            for r in rows]


@event.listens_for(Session, "before_commit")
def _write_pending(session: Session) -> None:
    pending: list[NewAuditEvent] | None = session.info.pop(_PENDING, None)
    if pending:
        # Everything else first: the head's lock is then held for the commit alone.
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
