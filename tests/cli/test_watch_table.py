"""The live table of `gridgate watch` on a terminal, as pure functions: rows in, lines
out, and the ANSI that redraws them in place."""

from __future__ import annotations

import io
from datetime import datetime

from gateway.cli.jobs.watch_table import LiveTable, Row, redraw, table_lines
from gateway.schemas.events import JobStateEvent, job_state_event

A = Row("0123456789ab", "sim", "RUNNING", "local", "")
B = Row("fedcba987654", "a much longer job name than the column shows", "QUEUED", "-",
        "Priority: waiting for higher-priority jobs")


def test_lines_are_a_header_and_a_row_per_job_in_aligned_columns() -> None:
    lines = table_lines([A, B], 200)
    assert lines[0].split() == ["ID", "NAME", "STATE", "SITE", "REASON"]
    assert lines[1].split() == ["01234567", "sim", "RUNNING", "local"]
    assert lines[2].startswith("fedcba98  a much longer job name t  QUEUED   -      Priority:")
    assert lines[0].index("STATE") == lines[1].index("RUNNING") == lines[2].index("QUEUED")


def test_no_line_is_wider_than_the_terminal_nor_moves_the_cursor() -> None:
    hostile = Row("0123456789ab", "x\x1b[2Jy\nz", "FAILED", "local", "bad\rreason")
    for width in (1, 20, 40):
        lines = table_lines([A, B, hostile], width)
        assert all(len(line) <= width for line in lines), lines
    assert not any("\x1b" in line or "\r" in line or "\n" in line
                   for line in table_lines([hostile], 200))


def test_redraw_moves_up_over_the_last_table_and_clears_what_it_leaves() -> None:
    assert redraw(0, ["h", "r"]) == "h\x1b[K\nr\x1b[K\n\x1b[J"
    assert redraw(2, ["h", "r", "s"]) == "\x1b[2Fh\x1b[K\nr\x1b[K\ns\x1b[K\n\x1b[J"


def event(job_id: str, to: str, event_id: int) -> JobStateEvent:
    return job_state_event(event_id, "https://gw", datetime(2025, 1, 1),
                           {"from": None, "to": to, "reason": None, "raw_state": None,
                            "actor": "worker", "job": {"id": job_id, "name": "sim",
                                                       "site": None, "project": "p"}})


def test_each_event_updates_its_row_in_place_and_new_jobs_add_rows() -> None:
    out = io.StringIO()
    table = LiveTable(80, out)
    table.show(event("a" * 36, "QUEUED", 1))
    table.show(event("b" * 36, "QUEUED", 2))
    table.show(event("a" * 36, "RUNNING", 3))
    writes = out.getvalue().split("\x1b[J")[:-1]
    assert [w.startswith("\x1b[") for w in writes] == [False, True, True]
    assert writes[1].startswith("\x1b[2F") and writes[2].startswith("\x1b[3F")
    last = [line.removesuffix("\x1b[K") for line in writes[2].removeprefix("\x1b[3F")
            .splitlines()]
    assert [line.split()[:3] for line in last[1:]] == [["aaaaaaaa", "sim", "RUNNING"],
                                                       ["bbbbbbbb", "sim", "QUEUED"]]
