"""The step graph: every cycle found and named as a path; a stable topological order."""

from __future__ import annotations

import pytest

from workflows.graph import cycles, describe, topological_order

N = "needs"
INPUT = "takes an input from"


@pytest.mark.parametrize(("nodes", "edges", "expected"), [
    ("abc", {"b": {"a": N}, "c": {"b": N, "a": N}}, []),
    ("a", {"a": {"a": N}}, [["a", "a"]]),
    ("ab", {"a": {"b": N}, "b": {"a": INPUT}}, [["a", "b", "a"]]),
    # The shortest way back from the first step of the group.
    ("abcd", {"a": {"b": N}, "b": {"c": N, "a": N}, "c": {"a": N}, "d": {"a": N}},
     [["a", "b", "a"]]),
    # Two separate groups: one cycle each, in the order their first steps are written.
    ("xyzuv", {"u": {"v": N}, "v": {"u": N}, "y": {"z": N}, "z": {"y": N}},
     [["y", "z", "y"], ["u", "v", "u"]]),
    # Edges to steps that do not exist (reported elsewhere) are ignored here.
    ("ab", {"a": {"nope": N}, "b": {"a": N}}, []),
])
def test_cycles(nodes: str, edges: dict[str, dict[str, str]],
                expected: list[list[str]]) -> None:
    assert cycles(list(nodes), edges) == expected


def test_describe() -> None:
    edges = {"a": {"b": N}, "b": {"c": INPUT}, "c": {"a": N}}
    assert describe(["a", "b", "c", "a"], edges) == (
        "a needs b, b takes an input from c, c needs a")


def test_a_long_chain_is_no_cycle_and_needs_no_recursion() -> None:
    nodes = [f"s{i}" for i in range(5000)]
    edges = {nodes[i]: {nodes[i - 1]: N} for i in range(1, len(nodes))}
    assert cycles(nodes, edges) == []


@pytest.mark.parametrize(("nodes", "edges", "expected"), [
    ("abc", {}, "abc"),
    ("cba", {"c": {"a": N}, "b": {"a": N}}, "acb"),
    # Each time, the first step written whose prerequisites are placed.
    ("abcd", {"a": {"d": N}, "b": {"c": N}}, "cbda"),
])
def test_topological_order(nodes: str, edges: dict[str, dict[str, str]], expected: str) -> None:
    assert "".join(topological_order(list(nodes), edges)) == expected


def test_topological_order_refuses_a_cycle() -> None:
    with pytest.raises(ValueError, match="cycle"):
        topological_order(["a", "b"], {"a": {"b": N}, "b": {"a": N}})
