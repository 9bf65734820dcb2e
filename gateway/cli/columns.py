"""The one width rule of the CLI's tables, as `squeue -o` users expect: fit the terminal
by leaving out the least important columns, never by cutting a header or an id.

A table is a list of columns and rows of text, laid out when printed, at the width it is
printed at (the terminal's, $COLUMNS, or no limit when piped: see render.stdout_console):

- a plain column (an id, a state, a number, a time) is always shown whole;
- a free-text column (a reason, a description) takes the width left over and is cut with
  an ellipsis there, or wrapped when `wrap` says whole words matter more than one line;
- while the plain columns and the free text's least share do not fit, the column with the
  highest `drop` rank is left out (0: never), and a last line names what was left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from rich.cells import cell_len
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

GAP = 2  # between two columns: each cell's one space of padding (none at the edges)
TEXT_SHARE = 12  # what free text keeps, at least, before plain columns are left out


@dataclass(frozen=True)
class Col:
    """One column: its header, how soon it is left out when narrow (0: never; the highest
    first), and whether it holds free text (cut with '…', or wrapped if `wrap`) and how
    much of it to keep before leaving out other columns (`least`)."""

    header: str
    drop: int = 0
    text: bool = False
    wrap: bool = False
    justify: Literal["left", "right"] = "left"
    least: int = TEXT_SHARE

    def least_width(self, natural: int) -> int:
        """What a free-text column keeps, at least: its header, and `least` of its text."""
        return max(cell_len(self.header), min(natural, self.least))


def _width(cell: Text) -> int:
    return max((cell_len(line) for line in cell.plain.splitlines()), default=0)


def _shares(room: int, least: Sequence[int], wants: Sequence[int]) -> list[int]:
    """Split `room` among free-text columns: each its least first, then what is left
    evenly, no column more than it wants (the least wanting filled first)."""
    shares = list(least)
    left = room - sum(shares)
    hungry = sorted(range(len(wants)), key=lambda i: wants[i] - shares[i])
    for n, i in enumerate(hungry):
        more = max(0, min(wants[i] - shares[i], left // (len(hungry) - n)))
        shares[i] += more
        left -= more
    return shares


def choose(columns: Sequence[Col], natural: Sequence[int], width: int) -> list[int]:
    """The indices of the columns shown at `width`, in order (the width rule)."""
    shown = list(range(len(columns)))

    def need() -> int:
        widths = [columns[i].least_width(natural[i]) if columns[i].text else natural[i]
                  for i in shown]
        return sum(widths) + GAP * (len(shown) - 1)

    while need() > width:
        droppable = [i for i in shown if columns[i].drop]
        if not droppable:
            break
        # The highest rank goes first; among equals, the rightmost.
        shown.remove(max(droppable, key=lambda i: (columns[i].drop, i)))
    return shown


class Grid:
    """A table laid out at the width it is printed at, by the width rule above."""

    def __init__(self, columns: Sequence[Col], title: str | None = None) -> None:
        self.columns = list(columns)
        self.title = title
        self.rows: list[list[Text]] = []

    def add_row(self, *cells: Text | str) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"{len(cells)} cells for {len(self.columns)} columns")
        self.rows.append([c if isinstance(c, Text) else Text(c) for c in cells])

    def layout(self, width: int) -> tuple[Table, list[str]]:
        """The table at `width`, and the headers of the columns it leaves out."""
        natural = [max([cell_len(c.header), *(_width(row[i]) for row in self.rows)])
                   for i, c in enumerate(self.columns)]
        shown = choose(self.columns, natural, width)
        texts = [i for i in shown if self.columns[i].text]
        plain = sum(natural[i] for i in shown if not self.columns[i].text)
        room = width - plain - GAP * (len(shown) - 1)
        least = [self.columns[i].least_width(natural[i]) for i in texts]
        shares = dict(zip(texts, _shares(room, least, [natural[i] for i in texts]),
                          strict=True))
        table = Table(box=None, pad_edge=False, header_style="bold", title=self.title,
                      title_justify="left")
        for i in shown:
            col = self.columns[i]
            if col.text:
                table.add_column(col.header, width=shares[i], justify=col.justify,
                                 no_wrap=not col.wrap,
                                 overflow="fold" if col.wrap else "ellipsis")
            else:
                # Its whole width: rich may not shrink it (ids, states, numbers, times).
                table.add_column(col.header, min_width=natural[i], no_wrap=True,
                                 justify=col.justify)
        for row in self.rows:
            table.add_row(*(row[i] for i in shown))
        left_out = [c.header for i, c in enumerate(self.columns) if i not in shown]
        return table, left_out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        table, left_out = self.layout(options.max_width)
        yield table
        if left_out:
            yield Text(f"(left out at {options.max_width} columns: {', '.join(left_out)}; "
                       "--json has everything)", style="dim")
