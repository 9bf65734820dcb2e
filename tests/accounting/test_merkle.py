"""The Merkle log's math against Certificate Transparency's reference tree (the eight
leaves, roots and proofs of RFC 6962's reference implementation's tests, which RFC 9162
keeps), then every proof of every tree up to 40 leaves built from stored subtrees, checked
by the RFC's verification algorithms, and refused when anything is changed."""

from __future__ import annotations

import pytest

from gateway.accounting.merkle import (
    EMPTY_ROOT,
    Frontier,
    Node,
    consistency_spans,
    inclusion_spans,
    leaf_hash,
    node_hash,
    nodes_for,
    proof,
    span_root,
    verify_consistency,
    verify_inclusion,
)

ENTRIES = [bytes.fromhex(h) for h in (
    "", "00", "10", "2021", "3031", "40414243", "5051525354555657",
    "606162636465666768696a6b6c6d6e6f")]
ROOTS = [
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
    "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
    "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
    "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
    "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
    "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
    "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
    "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
]
# (leaf index, tree size, path)
INCLUSION = [
    (0, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (5, 8, ["bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 3, ["fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"]),
    (1, 5, ["6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
]
# (first size, second size, path)
CONSISTENCY = [
    (1, 1, []),
    (1, 8, ["96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
            "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"]),
    (6, 8, ["0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
            "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"]),
    (2, 5, ["5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
            "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"]),
]


def grow(leaves: list[bytes]) -> tuple[dict[Node, bytes], list[bytes]]:
    """Every stored subtree of the tree of `leaves`, and its root after each leaf."""
    frontier, stored, roots = Frontier(), {}, [EMPTY_ROOT]
    for leaf in leaves:
        stored.update(frontier.append(leaf))
        roots.append(frontier.root())
    return stored, roots


REFERENCE, REFERENCE_ROOTS = grow([leaf_hash(e) for e in ENTRIES])


def test_the_roots_are_the_reference_roots() -> None:
    assert [r.hex() for r in REFERENCE_ROOTS] == ROOTS
    assert EMPTY_ROOT.hex() == ROOTS[0]


@pytest.mark.parametrize(("index", "size", "path"), INCLUSION)
def test_inclusion_proofs_are_the_reference_proofs(index: int, size: int,
                                                   path: list[str]) -> None:
    made = proof(inclusion_spans(index, size), REFERENCE)
    assert [p.hex() for p in made] == path
    root = bytes.fromhex(ROOTS[size])
    assert verify_inclusion(leaf_hash(ENTRIES[index]), index, size, made, root)
    assert not verify_inclusion(leaf_hash(ENTRIES[index]), index, size, made, EMPTY_ROOT)


@pytest.mark.parametrize(("first", "second", "path"), CONSISTENCY)
def test_consistency_proofs_are_the_reference_proofs(first: int, second: int,
                                                     path: list[str]) -> None:
    made = proof(consistency_spans(first, second), REFERENCE)
    assert [p.hex() for p in made] == path
    assert verify_consistency(first, second, bytes.fromhex(ROOTS[first]),
                              bytes.fromhex(ROOTS[second]), made)


def flip(h: bytes) -> bytes:
    return bytes([h[0] ^ 1]) + h[1:]


def test_every_proof_of_every_tree_up_to_40_leaves() -> None:
    leaves = [leaf_hash(i.to_bytes(2, "big")) for i in range(40)]
    stored, roots = grow(leaves)
    for size in range(1, 41):
        assert span_root((0, size), stored) == roots[size]
        for index in range(size):
            spans = inclusion_spans(index, size)
            # A proof reads only subtrees the tree had when it was `size` leaves.
            assert all((n.index + 1) << n.level <= size for n in nodes_for(spans))
            path = proof(spans, stored)
            assert verify_inclusion(leaves[index], index, size, path, roots[size])
            assert not verify_inclusion(flip(leaves[index]), index, size, path, roots[size])
            if path:
                assert not verify_inclusion(leaves[index], index, size,
                                            [*path[:-1], flip(path[-1])], roots[size])
            if size > 1:
                other = (index + 1) % size
                assert not verify_inclusion(leaves[index], other, size, path, roots[size])
        for first in range(1, size + 1):
            path = proof(consistency_spans(first, size), stored)
            assert verify_consistency(first, size, roots[first], roots[size], path)
            assert not verify_consistency(first, size, flip(roots[first]), roots[size], path)
            if first < size:
                assert not verify_consistency(first, size, roots[first], flip(roots[size]),
                                              path)


def test_a_frontier_loaded_from_stored_subtrees_grows_the_same_tree() -> None:
    leaves = [leaf_hash(bytes([i])) for i in range(23)]
    stored, roots = grow(leaves)
    resumed = Frontier.load(13, lambda wanted: {n: stored[n] for n in wanted})
    assert resumed.root() == roots[13]
    for leaf in leaves[13:]:
        for node, h in resumed.append(leaf):
            assert stored[node] == h
    assert resumed.root() == roots[23]


def test_a_node_is_never_a_leaf() -> None:
    a, b = leaf_hash(b"a"), leaf_hash(b"b")
    assert node_hash(a, b) != leaf_hash(a + b)


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="not in a tree"):
        inclusion_spans(3, 3)
    with pytest.raises(ValueError, match="no consistency proof"):
        consistency_spans(0, 3)
    assert not verify_inclusion(EMPTY_ROOT, 0, 0, [], EMPTY_ROOT)
    assert not verify_consistency(3, 2, EMPTY_ROOT, EMPTY_ROOT, [])
    with pytest.raises(ValueError, match="perfect subtrees"):
        Frontier(3, [EMPTY_ROOT])
