"""An audit log entry's pure rules: its canonical form (what its leaf hash covers) and the
entry as read back. No I/O.

The canonical form leaves the row's id and leaf index out: ids are the database's
(PostgreSQL's sequences skip numbers when a transaction rolls back) and the leaf index is
the entry's place in the tree, which the tree's hashes fix.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from gateway.accounting.merkle import leaf_hash


def canonical_time(at: datetime) -> str:
    """`at` in UTC, to the microsecond, one spelling on every database."""
    if at.tzinfo is None:
        raise ValueError("an audit event's time must be timezone-aware")
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def as_json(data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` as the database's JSON column hands it back (keys as text, tuples as
    lists): what is hashed is what is stored."""
    loaded: dict[str, Any] = json.loads(json.dumps(data, allow_nan=False))
    return loaded


def canonical(at: datetime, kind: str, subject: str, actor: str,
              data: Mapping[str, Any]) -> bytes:
    """The event's fields as JSON with sorted keys and no spaces."""
    return json.dumps({"at": canonical_time(at), "kind": kind, "subject": subject,
                       "actor": actor, "data": data},
                      sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode()


@dataclass(frozen=True)
class Entry:
    """One stored entry, as read back; `seq` is its leaf index (None: not in the tree
    yet)."""

    id: int
    seq: int | None
    at: datetime
    kind: str
    subject: str
    actor: str
    data: Mapping[str, Any]

    def canonical(self) -> bytes:
        """What its leaf hash covers, from what it says now."""
        return canonical(self.at, self.kind, self.subject, self.actor, self.data)

    def leaf(self) -> bytes:
        """Its leaf hash, from what it says now (RFC 9162: SHA-256(0x00 || canonical))."""
        return leaf_hash(self.canonical())

    def told(self) -> list[tuple[str, Mapping[str, Any]]]:
        """What the entry records, as (kind, data): itself, then the entry a submission's
        state change carries (its lien: gateway.repositories.money.fast_hold writes both
        with one statement, so they are one entry)."""
        carried = self.data.get("carried")
        if not isinstance(carried, Mapping):
            return [(self.kind, self.data)]
        return [(self.kind, self.data), (str(carried["kind"]), carried)]
