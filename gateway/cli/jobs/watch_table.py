"""`gridgate watch` on a terminal: a table of the watched jobs (one row each: ID, NAME,
STATE, SITE, START, REASON) redrawn in place on each event. START is when the job is
predicted to start while it waits (`~` and the time: from its placement, then each
prediction event), when it started once it has. The rows and the lines are pure
functions; `LiveTable` only writes what `redraw` says (plain ANSI: the cursor goes up to
the table's first line, each line is rewritten and cleared to its end)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TextIO

from gateway.schemas.events import (
    JOB_PLACEMENT_TYPE,
    JOB_STATE_TYPE,
    JobPlacementEvent,
    JobPredictionEvent,
    JobStateEvent,
)

# The events the table shows: a job's state changes, its placement and its predictions.
JobEvent = JobStateEvent | JobPlacementEvent | JobPredictionEvent

HEADERS = ("ID", "NAME", "STATE", "SITE", "START", "REASON")
# The states a job has not started in (yet, or again): START shows a prediction.
WAITING = ("ACCEPTED", "HELD", "SUBMITTING", "QUEUED")
# Longest NAME shown (the reason gets the rest of the line).
NAME_WIDTH = 24
# Cursor to the start of the line N lines up; clear to the end of the line; clear from the
# cursor to the end of the screen.
UP = "\x1b[{}F"
CLEAR_LINE = "\x1b[K"
CLEAR_BELOW = "\x1b[J"


@dataclass(frozen=True)
class Row:
    """One watched job as its latest events show it: `start` is when it started, or
    (`predicted`) is predicted to."""

    id: str
    name: str
    state: str
    site: str
    reason: str
    start: datetime | None = None
    predicted: bool = False


def row_of(event: JobEvent, previous: Row | None = None) -> Row:
    """The job's row after `event` (its state change, placement or new predicted start),
    from its row before (`previous`)."""
    job = event["data"]["job"]
    row = previous or Row(id=event["subject"], name=job["name"], state="-", site="-",
                          reason="")
    row = replace(row, name=job["name"], site=job["site"] or row.site)
    if event["type"] == JOB_STATE_TYPE:
        data = event["data"]
        row = replace(row, state=data["to"], site=job["site"] or "-",
                      reason=data["reason"] or "")
        if data["to"] == "RUNNING":
            return replace(row, start=_moment(event["time"]), predicted=False)
        if data["to"] in WAITING and not row.predicted:
            return replace(row, start=None)  # back in a queue: its old start is past
        return row
    if event["type"] == JOB_PLACEMENT_TYPE:
        told = event["data"].get("predicted_start")
    else:
        told = event["data"]["predicted_start"]
    if told is None or row.state not in (*WAITING, "-"):
        return row  # a late word about a job that has started
    return replace(row, start=_moment(told), predicted=True)


def _moment(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def start_text(row: Row, now: datetime | None = None) -> str:
    """START: local time, HH:MM today, else MM-DD HH:MM; `~` before a prediction."""
    if row.start is None:
        return "-"
    local = row.start.astimezone()
    today = (now or datetime.now(UTC)).astimezone().date()
    text = local.strftime("%H:%M" if local.date() == today else "%m-%d %H:%M")
    return "~" + text if row.predicted else text


def table_lines(rows: list[Row], width: int, now: datetime | None = None) -> list[str]:
    """The table's lines (a header, then a row per job in the order given), each cut to
    `width` characters so none wraps (a wrapped line would break the redraw)."""
    cells = [HEADERS, *((r.id[:8], _one_line(r.name)[:NAME_WIDTH], r.state, r.site,
                         start_text(r, now), _one_line(r.reason)) for r in rows)]
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

    def __init__(self, width: int, out: TextIO | None = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        """`clock`: what time it is (default: the system's; START shows dates by it)."""
        self.rows: dict[str, Row] = {}
        self.width = width
        self.out = out or sys.stdout
        self.clock = clock
        self.drawn = 0

    def show(self, event: JobEvent) -> None:
        self.rows[event["subject"]] = row_of(event, self.rows.get(event["subject"]))
        lines = table_lines(list(self.rows.values()), self.width,
                            self.clock() if self.clock is not None else None)
        self.out.write(redraw(self.drawn, lines))
        self.out.flush()
        self.drawn = len(lines)
