"""`gridgate workflow graph`: a workflow's DAG in the terminal, one level a row group.

Each instance is drawn at its level (1 + the deepest instance it needs) with its state's
mark, its matrix values, where it runs, and what it needs when that is not the whole
level above (a full level above is drawn as one `│` joint):

    mesh-solve-gather  running  (3 completed, 1 running, 1 pending)
    ✔ mesh                                        local
    │
    ├─ ✔ solve[0]  n=1                            local
    ├─ ● solve[1]  n=2                            local
    └─ ○ solve[2]  n=3
    │
    ○ gather  ⇐ solve[0], solve[1], solve[2]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

MARKS = {"pending": ("○", "dim"), "running": ("●", "cyan"), "completed": ("✔", "green"),
         "failed": ("✘", "red"), "cancelled": ("⊘", "yellow"), "skipped": ("↷", "yellow")}


def levels(steps: Sequence[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The instances by level; `steps` lists producers before their consumers."""
    level: dict[str, int] = {}
    for step in steps:
        level[step["instance"]] = 1 + max((level[n] for n in step["needs"]), default=-1)
    rows: list[list[dict[str, Any]]] = [[] for _ in range(max(level.values(), default=-1) + 1)]
    for step in steps:
        rows[level[step["instance"]]].append(step)
    return rows


def _node(step: dict[str, Any], above: list[dict[str, Any]], width: int) -> Text:
    mark, style = MARKS.get(step["state"], ("?", ""))
    text = Text()
    text.append(f"{mark} ", style=style)
    text.append(step["instance"], style="bold")
    if step["matrix"]:
        text.append(f"  {step['matrix']}")
    needs = step["needs"]
    if needs and sorted(needs) != sorted(s["instance"] for s in above):
        text.append(f"  ⇐ {', '.join(needs)}", style="dim")
    pad = max(1, width - len(text.plain))
    text.append(" " * pad)
    text.append(step["state"], style=style)
    if step.get("site"):
        text.append(f"  {step['site']}")
    if step["state"] in ("failed", "skipped") and step.get("reason"):
        text.append(f"  ({step['reason']})", style="dim")
    return text


def graph(workflow: dict[str, Any]) -> list[Text]:
    """The lines that draw the workflow's DAG (see module)."""
    counts = ", ".join(f"{n} {s}" for s, n in sorted(workflow["step_states"].items()))
    lines = [Text(f"{workflow['name']}  {workflow['state']}  ({counts})", style="bold")]
    rows = levels(workflow["steps"] or [])
    width = 4 + max((len(s["instance"]) + len(s["matrix"]) + 2
                     for s in workflow["steps"] or []), default=0)
    width = min(width + 2, 60)
    for i, row in enumerate(rows):
        above = rows[i - 1] if i else []
        if i:
            lines.append(Text("│"))
        for j, step in enumerate(row):
            node = _node(step, above, width - (3 if len(row) > 1 else 0))
            if len(row) > 1:
                node = Text("└─ " if j == len(row) - 1 else "├─ ") + node
            lines.append(node)
    return lines
