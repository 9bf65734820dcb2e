"""A Merkle tree log as RFC 9162 (Certificate Transparency 2.0) defines it, pure: leaf and
node hashes, a tree grown one leaf at a time, inclusion and consistency proofs and their
verification. No I/O: proofs are built from the hashes of the tree's perfect subtrees
(`Node`), which a caller stores as the tree grows and looks up by `nodes_for`.

Hashes are 32 raw bytes here; callers store and show them as hex.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

# RFC 9162 2.1.1: a leaf's hash and an interior node's are prefixed differently, so no
# node can be passed off as a leaf.
_LEAF, _NODE = b"\x00", b"\x01"
EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(entry: bytes) -> bytes:
    """MTH of a one-entry list: SHA-256(0x00 || entry)."""
    return hashlib.sha256(_LEAF + entry).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """An interior node: SHA-256(0x01 || left || right)."""
    return hashlib.sha256(_NODE + left + right).digest()


@dataclass(frozen=True, order=True)
class Node:
    """The perfect subtree of 2**level leaves starting at leaf index * 2**level."""

    level: int
    index: int


Span = tuple[int, int]  # leaves [start, end)


def _split(size: int) -> int:
    """The largest power of two smaller than `size` (> 1): where RFC 9162 splits a tree."""
    return 1 << ((size - 1).bit_length() - 1)


def perfect_blocks(span: Span) -> list[Node]:
    """The perfect subtrees `span` is made of, left to right: one per bit of its length,
    largest first. Every span a proof names starts at a multiple of its largest block."""
    start, end = span
    blocks = []
    for level in range((end - start).bit_length() - 1, -1, -1):
        if (end - start) >> level & 1:
            blocks.append(Node(level, start >> level))
            start += 1 << level
    return blocks


def span_root(span: Span, nodes: Mapping[Node, bytes]) -> bytes:
    """MTH of the leaves in `span`, from its perfect blocks' hashes (folded from the right,
    as RFC 9162's recursion joins them)."""
    blocks = perfect_blocks(span)
    if not blocks:
        return EMPTY_ROOT
    root = nodes[blocks[-1]]
    for block in reversed(blocks[:-1]):
        root = node_hash(nodes[block], root)
    return root


def inclusion_spans(index: int, size: int) -> list[Span]:
    """The subtrees whose roots make PATH(index, D[size]) (RFC 9162 2.1.3.1), leaf end
    first."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size}")
    spans: list[Span] = []
    start, end = 0, size
    while end - start > 1:
        k = _split(end - start)
        if index < start + k:
            spans.append((start + k, end))
            end = start + k
        else:
            spans.append((start, start + k))
            start += k
    return spans[::-1]


def consistency_spans(first: int, second: int) -> list[Span]:
    """The subtrees whose roots make PROOF(first, D[second]) (RFC 9162 2.1.4.1)."""
    if not 0 < first <= second:
        raise ValueError(f"no consistency proof from a tree of {first} to one of {second}")
    spans: list[Span] = []
    start, end, m, whole = 0, second, first, True
    while m != end - start:
        k = _split(end - start)
        if m <= k:
            spans.append((start + k, end))
            end = start + k
        else:
            spans.append((start, start + k))
            start, m, whole = start + k, m - k, False
    if not whole:
        spans.append((start, end))
    return spans[::-1]


def nodes_for(spans: Sequence[Span]) -> set[Node]:
    """Every perfect subtree whose hash the roots of `spans` need."""
    return {block for span in spans for block in perfect_blocks(span)}


def proof(spans: Sequence[Span], nodes: Mapping[Node, bytes]) -> list[bytes]:
    """The roots of `spans`: a proof, from the perfect subtrees' hashes."""
    return [span_root(span, nodes) for span in spans]


def _rise(fn: int, sn: int) -> tuple[int, int]:
    """Right-shift both until fn's lowest bit is set or fn is 0 (RFC 9162's loops)."""
    while fn and not fn & 1:
        fn, sn = fn >> 1, sn >> 1
    return fn, sn


def verify_inclusion(leaf: bytes, index: int, size: int, path: Sequence[bytes],
                     root: bytes) -> bool:
    """RFC 9162 2.1.3.2: does `path` prove leaf `index` of a tree of `size` with `root`?"""
    if not 0 <= index < size:
        return False
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            fn, sn = _rise(fn, sn)
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and r == root


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes,
                       path: Sequence[bytes]) -> bool:
    """RFC 9162 2.1.4.2: does `path` prove the tree of `first` leaves with `first_root` a
    prefix of the tree of `second` with `second_root`?"""
    if not 0 < first <= second:
        return False
    if first == second:
        return not path and first_root == second_root
    if not path:
        return False
    hashes = [first_root, *path] if first & (first - 1) == 0 else list(path)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = hashes[0]
    for c in hashes[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            fn, sn = _rise(fn, sn)
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return fr == first_root and sr == second_root and sn == 0


class Frontier:
    """The right edge of a growing tree: the hashes of the perfect subtrees [0, size) is
    made of, largest first (at most 64). Appending a leaf yields the perfect subtrees it
    completes, which is what a log stores to build proofs later."""

    def __init__(self, size: int = 0, blocks: Sequence[bytes] = ()) -> None:
        if len(blocks) != size.bit_count():
            raise ValueError(f"a tree of {size} leaves has {size.bit_count()} perfect "
                             f"subtrees on its right edge, not {len(blocks)}")
        self.size = size
        self._levels = [n.level for n in perfect_blocks((0, size))]
        self._hashes = list(blocks)

    @classmethod
    def load(cls, size: int, lookup: Callable[[set[Node]], Mapping[Node, bytes]]
             ) -> Frontier:
        """The frontier of a stored tree of `size` leaves; `lookup` returns stored hashes."""
        edge = perfect_blocks((0, size))
        found = lookup(set(edge))
        return cls(size, [found[n] for n in edge])

    def append(self, leaf: bytes) -> Iterator[tuple[Node, bytes]]:
        """Add `leaf`; yields it as Node(0, its index) and every subtree it completes."""
        self._levels.append(0)
        self._hashes.append(leaf)
        self.size += 1
        yield Node(0, self.size - 1), leaf
        while len(self._levels) > 1 and self._levels[-1] == self._levels[-2]:
            right, level = self._hashes.pop(), self._levels.pop()
            merged = node_hash(self._hashes[-1], right)
            self._hashes[-1], self._levels[-1] = merged, level + 1
            yield Node(level + 1, (self.size >> (level + 1)) - 1), merged

    def root(self) -> bytes:
        """MTH of the leaves so far."""
        if not self._hashes:
            return EMPTY_ROOT
        root = self._hashes[-1]
        for h in reversed(self._hashes[:-1]):
            root = node_hash(h, root)
        return root
