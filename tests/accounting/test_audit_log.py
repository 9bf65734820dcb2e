"""The audit log's pure rules, table-driven: the canonical form, and what the walk names
for each kind of tampering with entries, recorded leaf hashes, stored subtrees and heads."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from gateway.accounting.audit_entry import Entry, canonical, canonical_time
from gateway.accounting.audit_log import Fault, Head, Leaf, verify
from gateway.accounting.merkle import Frontier, Node, leaf_hash

T0 = datetime(2026, 11, 25, 12, 0, 0, 123456, tzinfo=UTC)


class Log:
    """n entries in a tree, a signed head after `heads_at` sizes."""

    def __init__(self, n: int, heads_at: Sequence[int] = ()) -> None:
        self.entries = [Entry(i + 1, i, T0 + timedelta(seconds=i), "job.state", f"job:{i}",
                              "alice", {"n": i, "legs": [{"amount_milli": -i}]})
                        for i in range(n)]
        frontier, self.stored, self.heads = Frontier(), {}, []
        for e in self.entries:
            self.stored.update(frontier.append(e.leaf()))
            if frontier.size in heads_at or frontier.size == n:
                self.heads.append(Head(frontier.size, T0, frontier.root(), True))

    def leaves(self) -> list[Leaf]:
        return [Leaf(e.seq or 0, e.id, e.kind, e.subject, e.leaf(),
                     self.stored.get(Node(0, e.seq or 0))) for e in self.entries]

    def leaf_index(self, digest: bytes) -> int | None:
        return next((n.index for n, h in self.stored.items()
                     if n.level == 0 and h == digest), None)

    def nodes(self, wanted: Sequence[Node]) -> Mapping[Node, bytes]:
        return {n: self.stored[n] for n in wanted if n in self.stored}

    def walk(self, leaves: list[Leaf] | None = None, heads: list[Head] | None = None):  # type: ignore[no-untyped-def]
        return verify(self.leaves() if leaves is None else leaves,
                      self.heads if heads is None else heads, self.leaf_index, self.nodes)


def test_canonical_form_sorts_keys_and_spells_time_in_utc() -> None:
    eastern = T0.astimezone(timezone(timedelta(hours=-5)))
    assert canonical(eastern, "charge", "job:x", "bob", {"b": 1, "a": [2, "é"]}) == (
        '{"actor":"bob","at":"2026-11-25T12:00:00.123456Z","data":{"a":[2,"é"],"b":1},'
        '"kind":"charge","subject":"job:x"}').encode()
    entry = Entry(1, 0, T0, "k", "s", "a", {})
    assert entry.leaf() == leaf_hash(canonical(T0, "k", "s", "a", {}))


def test_naive_times_are_refused() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        canonical_time(datetime(2026, 1, 1))


def test_an_intact_log_and_every_head_hold() -> None:
    log = Log(7, heads_at=(1, 3, 4))
    verdict = log.walk()
    assert (verdict.leaves, verdict.signed_size, verdict.broken) == (7, 7, None)
    assert verify([], [], log.leaf_index, log.nodes).broken is None


@pytest.mark.parametrize("field, value", [
    ("kind", "charge"), ("subject", "job:other"), ("actor", "mallory"),
    ("data", {"n": 2, "legs": [{"amount_milli": 0}]}), ("at", T0 + timedelta(hours=1)),
])
def test_every_field_is_in_the_hash(field: str, value: object) -> None:
    log = Log(3)
    log.entries[1] = replace(log.entries[1], **{field: value})
    verdict = log.walk()
    assert verdict.broken is not None
    assert (verdict.broken.event_id, verdict.broken.fault, verdict.leaves) == (
        2, Fault.EDITED, 1)


def _delete(log: Log) -> None:
    del log.entries[2]


def _delete_first(log: Log) -> None:
    del log.entries[0]


def _swap_places(log: Log) -> None:
    """Entries 2 and 4 trade leaf indexes."""
    a, b = log.entries[1], log.entries[3]
    log.entries[1], log.entries[3] = replace(b, seq=a.seq), replace(a, seq=b.seq)


def _rehash(log: Log) -> None:
    """Entry 3 edited and its leaf hash recorded again: the tree's root moves."""
    log.entries[2] = replace(log.entries[2], data={"n": 999})
    log.stored[Node(0, 2)] = log.entries[2].leaf()


def _rebuild(log: Log) -> None:
    """Entry 3 edited and every stored hash above it rebuilt: only the signed root says."""
    log.entries[2] = replace(log.entries[2], data={"n": 999})
    frontier, log.stored = Frontier(), {}
    for e in log.entries:
        log.stored.update(frontier.append(e.leaf()))


def _damage(log: Log) -> None:
    log.stored[Node(1, 0)] = b"\0" * 32


@pytest.mark.parametrize("tamper, broken_at, fault", [
    (_delete, 4, Fault.DELETED),
    (_delete_first, 2, Fault.DELETED),
    (_swap_places, 4, Fault.REORDERED),  # entry 4 now holds leaf 1
    (_rehash, None, Fault.REWRITTEN),
    (_rebuild, None, Fault.REWRITTEN),
    (_damage, None, Fault.DAMAGED),
])
def test_what_is_wrong_is_named(tamper: Callable[[Log], None], broken_at: int | None,
                                fault: Fault) -> None:
    log = Log(5)
    tamper(log)
    verdict = log.walk()
    assert verdict.broken is not None
    assert (verdict.broken.event_id, verdict.broken.fault) == (broken_at, fault)


def test_a_head_from_before_a_rewrite_still_catches_it() -> None:
    # The newest head re-signed over the rebuilt tree (a stolen key) leaves the older one.
    log = Log(5, heads_at=(4,))
    _rebuild(log)
    frontier = Frontier()
    for e in log.entries:
        for _ in frontier.append(e.leaf()):
            pass
    heads = [log.heads[0], Head(5, T0, frontier.root(), True)]
    verdict = log.walk(heads=heads)
    assert verdict.broken is not None and verdict.broken.fault is Fault.REWRITTEN
    assert "first 4 leaves" in verdict.broken.detail


def test_a_cut_tail_an_unsigned_leaf_and_a_forged_head() -> None:
    log = Log(5)
    cut = log.walk(leaves=log.leaves()[:3])
    assert cut.broken is not None and (cut.broken.fault, cut.leaves) == (Fault.TRUNCATED, 3)
    assert "signed a tree of 5" in cut.broken.detail
    added = log.walk(heads=[])
    assert added.broken is not None and added.broken.fault is Fault.ADDED
    forged = log.walk(heads=[replace(log.heads[0], signed=False)])
    assert forged.broken is not None and forged.broken.fault is Fault.FORGED_HEAD


def test_a_missing_leaf_hash_is_a_rewrite() -> None:
    log = Log(3)
    del log.stored[Node(0, 1)]
    verdict = log.walk()
    assert verdict.broken is not None and verdict.broken.fault is Fault.REWRITTEN
