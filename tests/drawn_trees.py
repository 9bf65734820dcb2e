"""Reading an error tree drawn in a module docstring (adapters, the gateway, the client).

A drawn line is indented four spaces: tree prefix (`├── `, `└── `, `│   `), the class
name, then its text; a line's depth in the drawing gives its parent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LINE = re.compile(r"(?P<indent>(?:│   |    )*)(?:[├└]── )?(?P<name>[A-Z]\w*)\s+(?P<text>\S.*)")


@dataclass(frozen=True)
class Node:
    """One drawn class: its name, the class drawn above it (None at the root), its text."""

    name: str
    parent: str | None
    text: str


def drawn_nodes(doc: str) -> list[Node]:
    """Every class drawn in the docstring's tree block, top to bottom."""
    nodes: list[Node] = []
    parents: list[str] = []  # the ancestors at each depth, for the line being read
    for line in (line[4:] for line in doc.splitlines() if line.startswith("    ")):
        match = _LINE.fullmatch(line)
        assert match is not None, f"not a tree line: {line!r}"
        depth = len(match["indent"]) // 4 + (0 if line[0].isalpha() else 1)
        del parents[depth:]
        nodes.append(Node(match["name"], parents[-1] if parents else None, match["text"]))
        parents.append(match["name"])
    return nodes
