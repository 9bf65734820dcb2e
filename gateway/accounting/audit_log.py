"""Checking the audit log, pure: walk its entries in leaf order, hash each again, grow the
tree, and hold every signed head against the root the leaves give at its size; name the
first thing that does not hold. Constant memory (a frontier of at most 64 hashes).

What each fault means:
- edited: an entry no longer matches the leaf hash taken when it entered the tree;
- deleted: a leaf index no entry holds any more;
- reordered: an entry holds a leaf index whose recorded hash is another leaf's;
- rewritten: entries and recorded hashes agree, but not with the root the gateway
  signed at that size (entries and tree rebuilt together);
- truncated: the gateway signed a larger tree than the log now holds;
- added: leaves that no signed head covers (the sequencer signs every leaf it takes in,
  in the same transaction);
- forged head: a head whose signature is not the gateway's;
- damaged: a stored subtree hash that its leaves do not give (proofs built from it would
  not verify).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from gateway.accounting.merkle import Frontier, Node

# Stored subtrees looked up at once.
_NODE_BATCH = 1000


class Fault(StrEnum):
    """What is wrong where the log first stops holding."""

    EDITED = "edited"
    DELETED = "deleted"
    REORDERED = "reordered"
    REWRITTEN = "rewritten"
    TRUNCATED = "truncated"
    ADDED = "added"
    FORGED_HEAD = "forged_head"
    DAMAGED = "damaged"


@dataclass(frozen=True)
class Leaf:
    """One entry in the tree: its leaf index and id, what it is, the hash of what it says
    now and the hash the tree recorded for its index (None: missing)."""

    seq: int
    event_id: int
    kind: str
    subject: str
    hash: bytes
    recorded: bytes | None


@dataclass(frozen=True)
class Head:
    """A stored tree head; `signed` tells whether its signature is the gateway's."""

    size: int
    at: datetime
    root: bytes
    signed: bool


@dataclass(frozen=True)
class Break:
    """Where the log first stops holding: the entry (None: no one entry) and why."""

    event_id: int | None
    fault: Fault
    detail: str


@dataclass(frozen=True)
class Verdict:
    """The outcome of the walk: leaves that hold, the largest signed head they match."""

    leaves: int
    signed_size: int
    broken: Break | None


def verify(leaves: Iterable[Leaf], heads: Iterable[Head],
           leaf_index: Callable[[bytes], int | None],
           stored: Callable[[Sequence[Node]], Mapping[Node, bytes]]) -> Verdict:
    """Walk `leaves` (by leaf index) against `heads` (by size); `leaf_index(hash)` names
    the leaf the tree recorded with that hash, if any, and `stored(nodes)` gives the
    stored hashes of the subtrees above the leaves."""
    frontier, signed = Frontier(), 0
    pending = iter(heads)
    head = next(pending, None)
    grown: list[tuple[Node, bytes]] = []
    for leaf in leaves:
        if (broken := _leaf_fault(leaf, frontier.size, leaf_index)) is not None:
            return Verdict(frontier.size, signed, broken)
        grown += [(n, h) for n, h in frontier.append(leaf.hash) if n.level > 0]
        if len(grown) >= _NODE_BATCH:
            if (broken := _node_fault(grown, stored)) is not None:
                return Verdict(frontier.size, signed, broken)
            grown = []
        while head is not None and head.size <= frontier.size:
            if (broken := _head_fault(head, frontier)) is not None:
                return Verdict(frontier.size, signed, broken)
            signed, head = head.size, next(pending, None)
    if (broken := _node_fault(grown, stored)) is not None:
        return Verdict(frontier.size, signed, broken)
    if head is not None:
        return Verdict(frontier.size, signed, Break(
            None, Fault.TRUNCATED,
            f"the log holds {frontier.size} leaves but the gateway signed a tree of "
            f"{head.size} at {_when(head.at)}: the entries after leaf {frontier.size - 1} "
            "were deleted"))
    if frontier.size > signed:
        return Verdict(frontier.size, signed, Break(
            None, Fault.ADDED,
            f"leaves {signed} to {frontier.size - 1} are in no tree head the gateway "
            "signed: they were written into the log outside the gateway"))
    return Verdict(frontier.size, signed, None)


def _node_fault(grown: list[tuple[Node, bytes]],
                stored: Callable[[Sequence[Node]], Mapping[Node, bytes]]) -> Break | None:
    found = stored([n for n, _ in grown]) if grown else {}
    for node, digest in grown:
        if found.get(node) != digest:
            first, last = node.index << node.level, ((node.index + 1) << node.level) - 1
            return Break(None, Fault.DAMAGED,
                         f"the tree's stored hash of leaves {first} to {last} is "
                         f"{'missing' if node not in found else 'not what they give'}: "
                         "proofs built from it would not verify")
    return None


def _leaf_fault(leaf: Leaf, expected: int,
                leaf_index: Callable[[bytes], int | None]) -> Break | None:
    what = f"entry {leaf.event_id} ({leaf.kind}, {leaf.subject})"
    if leaf.seq != expected:
        return Break(leaf.event_id, Fault.DELETED,
                     f"leaf {expected} is gone: no entry holds it, and {what} holds leaf "
                     f"{leaf.seq} (the entries between were deleted)")
    if leaf.recorded is None:
        return Break(leaf.event_id, Fault.REWRITTEN,
                     f"the tree has no hash for leaf {leaf.seq}, which {what} holds: the "
                     "tree's nodes were deleted")
    if leaf.hash == leaf.recorded:
        return None
    found = leaf_index(leaf.hash)
    if found is not None and found != leaf.seq:
        return Break(leaf.event_id, Fault.REORDERED,
                     f"{what} holds leaf {leaf.seq} but is the tree's leaf {found}: entries "
                     "were moved out of their order")
    return Break(leaf.event_id, Fault.EDITED,
                 f"{what} no longer matches the hash of leaf {leaf.seq}: it was changed "
                 "after it entered the log")


def _head_fault(head: Head, frontier: Frontier) -> Break | None:
    if not head.signed:
        return Break(None, Fault.FORGED_HEAD,
                     f"the tree head of size {head.size} ({_when(head.at)}) is not signed by "
                     "this gateway's key")
    if head.size == frontier.size and head.root != frontier.root():
        return Break(None, Fault.REWRITTEN,
                     f"the first {head.size} leaves no longer have the root the gateway "
                     f"signed at {_when(head.at)}: entries and tree were rewritten together")
    return None


def _when(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S UTC")
