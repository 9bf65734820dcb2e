"""The audit log's Merkle tree in the database: the sequencer, which takes committed
entries into the tree and signs each new head, and the proofs built from the stored
subtrees.

Commits never touch the tree: they only insert entries (gateway.repositories.money.audit).
One sequencer at a time grows it, in a transaction of its own that gives each entry its
leaf index, stores the subtrees the new leaves complete and the new signed head, so a
crash leaves either all of a step or none of it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import (
    Connection,
    Row,
    Table,
    bindparam,
    insert,
    select,
    text,
    tuple_,
    update,
)

from gateway.accounting.merkle import (
    EMPTY_ROOT,
    Frontier,
    Node,
    Span,
    consistency_spans,
    inclusion_spans,
    nodes_for,
    proof,
)
from gateway.db.audit_models import AuditEvent, AuditTreeHead, AuditTreeNode
from gateway.repositories import bulk
from gateway.repositories.money.audit import entry_of

_events, _nodes, _heads = (AuditEvent.__table__.c, AuditTreeNode.__table__.c,
                           AuditTreeHead.__table__.c)
_EVENTS, _NODES = cast(Table, AuditEvent.__table__), cast(Table, AuditTreeNode.__table__)
# Taken by the sequencer only (never by a commit that writes entries); any constant works.
_SEQUENCER_LOCK = 0x6175_6474
# Node lookups per statement.
_LOOKUP_BATCH = 500

Sign = Callable[[int, str, datetime], str]  # (size, root hex, at) -> signature


@dataclass(frozen=True)
class TreeHead:
    """A signed tree head: the root (hex) of the tree's first `size` leaves."""

    size: int
    at: datetime
    root: str
    signature: str


class TreeDamaged(Exception):
    """The stored tree no longer gives its last signed head's root: it will not be grown
    (`gridgate audit verify` names what changed)."""


def _head(r: Row[Any]) -> TreeHead:
    return TreeHead(r.size, r.at, r.root, r.signature)


def latest_head(conn: Connection) -> TreeHead | None:
    """The newest signed head, if the tree has one."""
    r = conn.execute(select(AuditTreeHead.__table__).order_by(_heads.size.desc())
                     .limit(1)).first()
    return None if r is None else _head(r)


def head_of_size(conn: Connection, size: int) -> TreeHead | None:
    """The head signed when the tree had `size` leaves, if one was."""
    r = conn.execute(select(AuditTreeHead.__table__).where(_heads.size == size)).first()
    return None if r is None else _head(r)


def heads(conn: Connection, batch: int = 1000) -> Iterator[TreeHead]:
    """Every signed head, smallest first (keyset pages: constant memory)."""
    after = 0
    while True:
        rows = conn.execute(select(AuditTreeHead.__table__).where(_heads.size > after)
                            .order_by(_heads.size).limit(batch)).all()
        for r in rows:
            yield _head(r)
        if len(rows) < batch:
            return
        after = rows[-1].size


def nodes(conn: Connection, wanted: Iterable[Node]) -> dict[Node, bytes]:
    """The stored hashes of the subtrees `wanted` (those stored; a missing one is absent)."""
    keys = sorted(set(wanted))
    found: dict[Node, bytes] = {}
    for i in range(0, len(keys), _LOOKUP_BATCH):
        chunk = [(n.level, n.index) for n in keys[i:i + _LOOKUP_BATCH]]
        for level, index, digest in conn.execute(
                select(_nodes.level, _nodes.index, _nodes.hash)
                .where(tuple_(_nodes.level, _nodes.index).in_(chunk))):
            found[Node(level, index)] = bytes.fromhex(digest)
    return found


def _proof(conn: Connection, spans: list[Span]) -> list[str]:
    stored = nodes(conn, nodes_for(spans))
    try:
        return [h.hex() for h in proof(spans, stored)]
    except KeyError as missing:
        raise TreeDamaged(f"the tree's subtree {missing} is missing") from None


def inclusion(conn: Connection, seqs: Iterable[int], size: int) -> dict[int, list[str]]:
    """Each leaf's inclusion proof (hex, leaf end first) in the tree of `size` leaves;
    leaves not in that tree are left out."""
    return {s: _proof(conn, inclusion_spans(s, size)) for s in seqs if 0 <= s < size}


def consistency(conn: Connection, first: int, second: int) -> list[str]:
    """The proof (hex) that the tree of `first` leaves is a prefix of the tree of
    `second`."""
    return _proof(conn, consistency_spans(first, second))


def integrate(conn: Connection, now: datetime, sign: Sign, *, every: float,
              limit: int = 10_000) -> TreeHead | None:
    """Take up to `limit` committed entries not yet in the tree into it, oldest id first,
    and sign the new head: None when no entry waits, or when the newest head is younger
    than `every` seconds. Run in a transaction of its own."""
    if conn.dialect.name == "postgresql":
        # SQLite's one writer already serialises sequencers.
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SEQUENCER_LOCK})
    last = latest_head(conn)
    # A head from the future (another host's clock ahead of this one's) holds nothing up.
    if last is not None and 0 <= (now - last.at).total_seconds() < every:
        return None
    rows = conn.execute(select(AuditEvent.__table__).where(_events.seq.is_(None))
                        .order_by(_events.id).limit(limit)).all()
    if not rows:
        return None
    size = 0 if last is None else last.size
    try:
        frontier = Frontier.load(size, lambda wanted: nodes(conn, wanted))
    except KeyError:
        frontier = None
    if frontier is None or frontier.root() != (
            EMPTY_ROOT if last is None else bytes.fromhex(last.root)):
        raise TreeDamaged(f"the stored tree of {size} leaves does not give the root of its "
                          "last signed head; run `gridgate audit verify`")
    grown: list[dict[str, object]] = []
    placed = []
    for r in rows:
        placed.append({"b_id": r.id, "b_seq": frontier.size})
        grown += [{"level": n.level, "index": n.index, "hash": h.hex()}
                  for n, h in frontier.append(entry_of(r).leaf())]
    conn.execute(update(_EVENTS).where(_events.id == bindparam("b_id"))
                 .values(seq=bindparam("b_seq")), placed)
    bulk.insert_rows(conn, _NODES, grown)
    root = frontier.root().hex()
    head = TreeHead(frontier.size, now, root, sign(frontier.size, root, now))
    conn.execute(insert(AuditTreeHead).values(size=head.size, at=head.at, root=head.root,
                                              signature=head.signature))
    return head
