"""`gridgate workflow graph`: a workflow's DAG in the terminal, one level a row group.

Each instance is drawn at its level (1 + the deepest instance it needs) with its state's
mark, its matrix values, where it runs, and what it needs when that is not the whole
level above (a full level above is drawn as one `│` joint):

    sweep  running  (2 completed, 1 pending, 1 running)
    ✔ mesh                completed  local
    │
    ├─ ✔ solve[0]  n=1    completed  local
    └─ ● solve[1]  n=2    running    local
    │
    ○ report  ⇐ solve[0]  pending
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


def _label(step: dict[str, Any], above: list[dict[str, Any]], prefix: str) -> Text:
    mark, style = MARKS.get(step["state"], ("?", ""))
    text = Text(prefix)
    text.append(f"{mark} ", style=style)
    text.append(step["instance"], style="bold")
    if step["matrix"]:
        text.append(f"  {step['matrix']}")
    needs = step["needs"]
    if needs and sorted(needs) != sorted(s["instance"] for s in above):
        text.append(f"  ⇐ {', '.join(needs)}", style="dim")
    return text


def _status(step: dict[str, Any]) -> Text:
    _, style = MARKS.get(step["state"], ("?", ""))
    text = Text(step["state"], style=style)
    if step.get("site"):
        text.append(f"  {step['site']}")
    if step["state"] in ("failed", "skipped") and step.get("reason"):
        text.append(f"  ({step['reason']})", style="dim")
    return text


def graph(workflow: dict[str, Any]) -> list[Text]:
    """The lines that draw the workflow's DAG (see module)."""
    counts = ", ".join(f"{n} {s}" for s, n in sorted(workflow["step_states"].items()))
    lines: list[Text] = [Text(f"{workflow['name']}  {workflow['state']}  ({counts})",
                              style="bold")]
    rows = levels(workflow["steps"] or [])
    drawn: list[tuple[Text, Text] | None] = []  # None: the joint between two levels
    for i, row in enumerate(rows):
        if i:
            drawn.append(None)
        for j, step in enumerate(row):
            prefix = "" if len(row) == 1 else "└─ " if j == len(row) - 1 else "├─ "
            drawn.append((_label(step, rows[i - 1] if i else [], prefix), _status(step)))
    # States line up in one column, two spaces after the longest label (at most 60).
    width = min(60, max((len(d[0].plain) for d in drawn if d is not None), default=0)) + 2
    for item in drawn:
        if item is None:
            lines.append(Text("│"))
            continue
        label, status = item
        lines.append(label + Text(" " * max(2, width - len(label.plain))) + status)
    return lines
