"""The step graph: cycles (each named as a path a person can follow) and a stable order."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping, Sequence

Edges = Mapping[str, Mapping[str, str]]
"""step -> {step it waits for: how ("needs", "takes an input from")}."""


def cycles(nodes: Sequence[str], edges: Edges) -> list[list[str]]:
    """One cycle per group of steps that wait for each other, as [a, b, ..., a], starting
    at the group's first step in `nodes` order; [] when the graph is a DAG."""
    found: list[list[str]] = []
    seen: set[str] = set()
    position = {n: i for i, n in enumerate(nodes)}
    for component in _components(nodes, edges):
        if len(component) == 1 and not any(n in edges.get(n, {}) for n in component):
            continue  # a step on no cycle (most of them: no sort needed)
        start = min(component, key=position.__getitem__)
        if start in seen:
            continue
        seen |= component
        found.append(_cycle_through(start, component, edges, position))
    return sorted(found, key=lambda c: position[c[0]])


def describe(cycle: Sequence[str], edges: Edges) -> str:
    """'a needs b, b takes an input from a': a cycle in words."""
    return ", ".join(f"{a} {edges[a][b]} {b}" for a, b in itertools.pairwise(cycle))


def topological_order(nodes: Sequence[str], edges: Edges) -> list[str]:
    """`nodes`, each after all it waits for: each time the first of `nodes` whose
    prerequisites are placed. ValueError for a graph with a cycle."""
    # Kahn's algorithm with the ready steps in a heap by their place in `nodes`: the
    # same order as that definition, in O(E + N log N) (workflows of 10,000 steps).
    position = {n: i for i, n in enumerate(nodes)}
    waiting = {n: len({m for m in edges.get(n, {}) if m in position}) for n in nodes}
    followers: dict[str, list[str]] = {n: [] for n in nodes}
    for n in nodes:
        for m in {m for m in edges.get(n, {}) if m in position}:
            followers[m].append(n)
    ready = [position[n] for n in nodes if waiting[n] == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        node = nodes[heapq.heappop(ready)]
        order.append(node)
        for follower in followers[node]:
            waiting[follower] -= 1
            if waiting[follower] == 0:
                heapq.heappush(ready, position[follower])
    if len(order) < len(nodes):
        raise ValueError("the step graph has a cycle")
    return order


def _components(nodes: Sequence[str], edges: Edges) -> list[set[str]]:
    # Tarjan's strongly connected components, iteratively: workflows may be deep chains.
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []
    known = set(nodes)
    for root in nodes:
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, [m for m in edges.get(root, {})
                                                     if m in known])]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, [m for m in edges.get(nxt, {}) if m in known]))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                components.append(component)
    return components


def _cycle_through(start: str, component: set[str], edges: Edges,
                   position: Mapping[str, int]) -> list[str]:
    # Breadth first inside the component: the shortest way back to `start`.
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted((m for m in edges.get(node, {}) if m in component),
                              key=position.__getitem__):
                if nxt == start:
                    return [*paths[node], start]
                if nxt in component and nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    following.append(nxt)
        frontier = following
    raise ValueError(f"{start} is on no cycle")
