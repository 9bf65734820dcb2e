"""`gridgate watch` on a terminal: a table of the watched jobs (one row each: ID, NAME,
STATE, SITE, REASON) redrawn in place on each event. The rows and the lines are pure
functions; `LiveTable` only writes what `redraw` says (plain ANSI: the cursor goes up to
the table's first line, each line is rewritten and cleared to its end)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TextIO

from gateway.schemas.events import JobStateEvent

HEADERS = ("ID", "NAME", "STATE", "SITE", "REASON")
# Longest NAME shown (the reason gets the rest of the line).
NAME_WIDTH = 24
# Cursor to the start of the line N lines up; clear to the end of the line; clear from the
# cursor to the end of the screen.
UP = "\x1b[{}F"
CLEAR_LINE = "\x1b[K"
CLEAR_BELOW = "\x1b[J"


@dataclass(frozen=True)
class Row:
    """One watched job as its latest event shows it."""

    id: str
    name: str
    state: str
    site: str
    reason: str


def row_of(event: JobStateEvent) -> Row:
    data = event["data"]
    return Row(id=event["subject"], name=data["job"]["name"], state=data["to"],
               site=data["job"]["site"] or "-", reason=data["reason"] or "")


def table_lines(rows: list[Row], width: int) -> list[str]:
    """The table's lines (a header, then a row per job in the order given), each cut to
    `width` characters so none wraps (a wrapped line would break the redraw)."""
    cells = [HEADERS, *((r.id[:8], _one_line(r.name)[:NAME_WIDTH], r.state, r.site,
                         _one_line(r.reason)) for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(len(HEADERS) - 1)]
    lines = []
    for c in cells:
        line = "  ".join([*(text.ljust(w) for text, w in zip(c, widths, strict=False)), c[-1]])
        lines.append(line.rstrip()[:max(width, 1)])
    return lines


def redraw(previous: int, lines: list[str]) -> str:
    """What to write to replace the `previous` lines last written (the cursor below
    them) by `lines`."""
    up = UP.format(previous) if previous else ""
    return up + "".join(line + CLEAR_LINE + "\n" for line in lines) + CLEAR_BELOW


def _one_line(text: str) -> str:
    """Text from a job (its name, a site's reason) on one line, control characters shown
    as spaces: they must not move the cursor."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


class LiveTable:
    """The watched jobs in first-seen order, redrawn on `stdout` after each event."""

    def __init__(self, width: int, out: TextIO | None = None) -> None:
        self.rows: dict[str, Row] = {}
        self.width = width
        self.out = out or sys.stdout
        self.drawn = 0

    def show(self, event: JobStateEvent) -> None:
        self.rows[event["subject"]] = row_of(event)
        lines = table_lines(list(self.rows.values()), self.width)
        self.out.write(redraw(self.drawn, lines))
        self.out.flush()
        self.drawn = len(lines)
