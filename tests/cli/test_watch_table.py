"""The live table of `gridgate watch` on a terminal, as pure functions: rows in, lines
out, and the ANSI that redraws them in place."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any, cast

from gateway.cli.jobs.watch_table import JobEvent, LiveTable, Row, redraw, row_of, table_lines
from gateway.schemas.events import (
    JOB_PLACEMENT_TYPE,
    JOB_PREDICTION_TYPE,
    JobStateEvent,
    gateway_event,
    job_state_event,
)

A = Row("0123456789ab", "sim", "RUNNING", "local", "")
B = Row("fedcba987654", "a much longer job name than the column shows", "QUEUED", "-",
        "Priority: waiting for higher-priority jobs")


def test_lines_are_a_header_and_a_row_per_job_in_aligned_columns() -> None:
    lines = table_lines([A, B], 200)
    assert lines[0].split() == ["ID", "NAME", "STATE", "SITE", "START", "REASON"]
    assert lines[1].split() == ["01234567", "sim", "RUNNING", "local", "-"]
    assert lines[2].startswith(
        "fedcba98  a much longer job name t  QUEUED   -      -      Priority:")
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


# Noon today, local time: START shows times of today as HH:MM.
NOON = datetime.now().astimezone().replace(hour=12, minute=0, second=0, microsecond=0)
JOB = {"id": "c" * 36, "name": "sim", "site": "hpc1", "project": "p"}


def told(kind: str, event_id: int, data: dict[str, Any]) -> JobEvent:
    return cast(JobEvent, gateway_event(event_id, "https://gw", kind, JOB["id"], NOON,
                                        {**data, "job": JOB}))


def stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def state(to: str, event_id: int, at: datetime) -> JobEvent:
    return job_state_event(event_id, "https://gw", at.astimezone(UTC).replace(tzinfo=None),
                           {"from": None, "to": to, "reason": None, "raw_state": None,
                            "actor": "worker", "job": JOB})


def test_start_is_the_prediction_while_the_job_waits_then_its_real_start() -> None:
    placed = told(JOB_PLACEMENT_TYPE, 2, {
        "policy": "fastest", "chosen": ["hpc1"], "why": "w", "hedge": 1, "deadline": None,
        "predicted_start": stamp(NOON + timedelta(minutes=30))})
    moved = told(JOB_PREDICTION_TYPE, 4, {
        "predicted_start": stamp(NOON + timedelta(hours=2)),
        "previous": stamp(NOON + timedelta(minutes=30)), "site": "hpc1",
        "basis": "scheduler"})
    row = row_of(state("ACCEPTED", 1, NOON))
    row = row_of(placed, row)
    assert (row.state, row.predicted) == ("ACCEPTED", True)
    assert table_lines([row], 80, NOON)[1].split()[4] == "~12:30"
    row = row_of(state("QUEUED", 3, NOON), row)  # the prediction stays while it waits
    assert table_lines([row], 80, NOON)[1].split()[3:5] == ["hpc1", "~12:30"]
    row = row_of(moved, row)
    assert table_lines([row], 80, NOON)[1].split()[4] == "~14:00"
    row = row_of(state("RUNNING", 5, NOON + timedelta(hours=1, minutes=5)), row)
    assert table_lines([row], 80, NOON)[1].split()[2:5] == ["RUNNING", "hpc1", "13:05"]
    # A prediction arriving late (the job started meanwhile) changes nothing; the real
    # start stays once the job has ended; another day shows its date.
    assert row_of(moved, row) == row
    row = row_of(state("COMPLETED", 6, NOON + timedelta(hours=3)), row)
    assert table_lines([row], 80, NOON)[1].split()[4] == "13:05"
    tomorrow = NOON + timedelta(days=1)
    assert table_lines([row], 80, tomorrow)[1].split()[4:6] == [
        (NOON + timedelta(hours=1, minutes=5)).strftime("%m-%d"), "13:05"]


def test_a_prediction_shows_in_the_live_table_and_fits_80_columns() -> None:
    out = io.StringIO()
    # Its clock is NOON's day: found by CI, a run collected before midnight and run after
    # it took tomorrow's start for today's.
    table = LiveTable(80, out, clock=lambda: NOON)
    table.show(cast(JobStateEvent, state("QUEUED", 1, NOON)))
    table.show(told(JOB_PREDICTION_TYPE, 2, {
        "predicted_start": stamp(NOON + timedelta(days=1, minutes=10)), "previous": None,
        "site": "hpc1", "basis": "queue projection"}))
    last = out.getvalue().split("\x1b[J")[-2].removeprefix("\x1b[2F").splitlines()
    lines = [line.removesuffix("\x1b[K") for line in last]
    assert lines[0].split() == ["ID", "NAME", "STATE", "SITE", "START", "REASON"]
    when = (NOON + timedelta(days=1, minutes=10)).strftime("~%m-%d %H:%M")
    assert when in lines[1] and lines[1].index(when) == lines[0].index("START")
    assert all(len(line) <= 80 for line in lines)
