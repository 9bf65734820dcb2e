"""The audit chain's pure rules: the canonical form of an event, the hash that links it to
the event before it, and the walk that finds the first broken link. No I/O.

An event's hash is sha256(previous hash + its canonical form), and the canonical form
leaves the row's id out: ids are the database's (PostgreSQL's sequences skip numbers when
a transaction rolls back), the chain is the order of the links themselves.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

# The previous hash of the first event.
GENESIS = "0" * 64


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


def link_hash(prev_hash: str, at: datetime, kind: str, subject: str, actor: str,
              data: Mapping[str, Any]) -> str:
    """The hash of an event that follows the event hashed `prev_hash`."""
    return hashlib.sha256(prev_hash.encode() + canonical(at, kind, subject, actor, data)
                          ).hexdigest()


@dataclass(frozen=True)
class Link:
    """One stored event, as read back."""

    id: int
    at: datetime
    kind: str
    subject: str
    actor: str
    data: Mapping[str, Any]
    prev_hash: str
    hash: str

    def told(self) -> list[tuple[str, Mapping[str, Any]]]:
        """What the link records, as (kind, data): itself, then the link a submission's
        state change carries (its lien: gateway.repositories.money.fast_hold writes both with
        one statement, so they are one link)."""
        carried = self.data.get("carried")
        if not isinstance(carried, Mapping):
            return [(self.kind, self.data)]
        return [(self.kind, self.data), (str(carried["kind"]), carried)]


class Fault(StrEnum):
    """What is wrong at the first broken link."""

    EDITED = "edited"
    DELETED = "deleted"
    REORDERED = "reordered"
    TRUNCATED = "truncated"


@dataclass(frozen=True)
class Break:
    """The first broken link: the event where the chain stops holding, and why."""

    event_id: int | None
    fault: Fault
    detail: str


@dataclass(frozen=True)
class Verdict:
    """The outcome of walking the chain."""

    events: int
    last_id: int | None
    broken: Break | None


def verify(links: Iterable[Link], head: tuple[int, str] | None,
           find: Callable[[str], int | None]) -> Verdict:
    """Walk `links` in id order from the genesis hash; stop at the first broken link.

    `head` is the stored (last id, last hash) (None: no head row); `find(hash)` names the
    event whose hash that is, if any (to tell an event moved from one deleted)."""
    expected, before, count = GENESIS, None, 0
    for link in links:
        if link.prev_hash != expected:
            return Verdict(count, before, _unlinked(link, before, find(link.prev_hash)))
        if link.hash != link_hash(link.prev_hash, link.at, link.kind, link.subject,
                                  link.actor, link.data):
            return Verdict(count, before, Break(
                link.id, Fault.EDITED,
                f"event {link.id} ({link.kind}, {link.subject}) does not match its hash: it "
                "was changed after it was written"))
        expected, before, count = link.hash, link.id, count + 1
    return Verdict(count, before, _tail(before, expected, head))


def _unlinked(link: Link, before: int | None, found: int | None) -> Break:
    after = f"event {before}" if before is not None else "the start of the chain"
    if found is None:
        return Break(link.id, Fault.DELETED,
                     f"event {link.id} links to an event that is not in the chain: what came "
                     f"between {after} and it was deleted (or rewritten with a new hash)")
    return Break(link.id, Fault.REORDERED,
                 f"event {link.id} links to event {found}, not to {after}: the events were "
                 "moved out of their order")


def _tail(last_id: int | None, last_hash: str, head: tuple[int, str] | None) -> Break | None:
    if head is None:
        if last_id is None:
            return None
        return Break(None, Fault.DELETED, "the chain has events but its head row is missing")
    head_id, head_hash = head
    if head_hash == last_hash:
        return None
    ends = f"event {last_id}" if last_id is not None else "its start"
    return Break(head_id, Fault.TRUNCATED,
                 f"the chain ends at {ends} but its head names event {head_id}: the events "
                 "after it were deleted")
