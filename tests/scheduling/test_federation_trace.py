"""Logs as federation sites: windows, skipped jobs, estimates, names, and refused input
(the hand-written logs of tests/scheduling/data: synthetic.swf and federation_*.swf)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from gateway.scheduling.evaluation.federation.trace import (
    TraceLog,
    merged_records,
    open_logs,
    site_name,
)
from gateway.scheduling.swf import SwfError

DATA = Path(__file__).parent / "data"
SYNTHETIC = DATA / "synthetic.swf"


def test_site_names_drop_the_extensions() -> None:
    assert site_name(Path("/x/KTH-SP2-1996-2.1-cln.swf.gz")) == "KTH-SP2-1996-2.1-cln"
    assert site_name(Path("plain.swf")) == "plain"
    assert site_name(Path("noext")) == "noext"


def test_the_same_log_twice_gets_distinct_sites() -> None:
    names = [log.spec.name for log in open_logs([SYNTHETIC, SYNTHETIC, SYNTHETIC])]
    assert names == ["synthetic", "synthetic#2", "synthetic#3"]


def test_window_keeps_the_first_days_and_skipped_jobs_are_counted() -> None:
    log = TraceLog(SYNTHETIC)
    # 2400 s is 1/36 of a day: jobs 1-9 were submitted before, 10-12 at or after.
    numbers = [job.number for job, _ in log.records(0, window_days=2400 / 86400)]
    assert numbers == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    everything = list(log.records(0))
    assert len(everything) == 12 and log.skipped == 0


def test_jobs_that_never_ran_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "gaps.swf"
    path.write_text("1 0 5 10 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1 -1\n"
                    "2 1 5 -1 4 -1 -1 4 60 -1 5 1 1 1 1 -1 -1 -1\n"    # no run time
                    "3 2 5 10 -1 -1 -1 -1 60 -1 1 1 1 1 1 -1 -1 -1\n"  # no processors
                    "4 3 -1 10 2 -1 -1 2 -1 -1 1 1 1 1 1 -1 -1 -1\n")  # no wait, no request
    log = TraceLog(path)
    records = list(log.records(3))
    assert [(job.origin, job.number) for job, _ in records] == [(3, 1), (3, 4)]
    assert log.skipped == 2
    # Job 4's request is unknown: the longest one seen so far (60 s) stands in.
    assert records[1][0].requested == 60.0 and records[1][1].estimate is None
    assert records[1][1].logged_wait == -1.0


def test_a_log_without_requests_uses_the_longest_run_known_at_submit(tmp_path: Path) -> None:
    # The router is told the longest run known at the submit. Job 1 runs 0-70, job 2
    # 10-40; job 3 comes at 50 (job 2's 30 s ended, job 1 has run 50 s), job 4 at 100
    # (job 1's 70 s ended). Never a job's own run: the router would know when every
    # running job ends. The engine's scheduler has perfect estimates, the usual choice.
    path = tmp_path / "norequests.swf"
    path.write_text("1 0 0 70 4 -1 -1 4 -1 -1 1 1 1 1 1 -1 -1 -1\n"
                    "2 10 0 30 4 -1 -1 4 -1 -1 1 1 1 1 1 -1 -1 -1\n"
                    "3 50 0 5 4 -1 -1 4 -1 -1 1 1 1 1 1 -1 -1 -1\n"
                    "4 100 0 5 4 -1 -1 4 -1 -1 1 1 1 1 1 -1 -1 -1\n")
    records = list(TraceLog(path).records(0))
    assert [job.requested for job, _ in records] == [1.0, 10.0, 50.0, 70.0]
    assert [truth.estimate for _, truth in records] == [70.0, 30.0, 5.0, 5.0]


def test_a_log_without_waits_counts_runs_from_the_submit(tmp_path: Path) -> None:
    # NASA's iPSC/860 log records no waits (-1; its submit times are start times) and no
    # requests. Each run is known from its submit on, as if it started then: before, no
    # run was ever known and the router was told 1 s for every job of the log (KTH with
    # it, 90 days: `fastest` 152 mean bounded slowdown against 31 with every job home).
    path = tmp_path / "nowaits.swf"
    path.write_text("1 0 -1 70 4 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n"
                    "2 10 -1 30 4 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n"
                    "3 50 -1 5 4 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n"
                    "4 100 -1 5 4 -1 -1 -1 -1 -1 -1 1 1 -1 -1 -1 -1 -1\n")
    records = list(TraceLog(path).records(0))
    assert [job.requested for job, _ in records] == [1.0, 10.0, 50.0, 70.0]
    assert [truth.logged_wait for _, truth in records] == [-1.0] * 4


def test_gzipped_logs_merge_by_submit_time(tmp_path: Path) -> None:
    packed = tmp_path / "federation_b.swf.gz"
    packed.write_bytes(gzip.compress((DATA / "federation_b.swf").read_bytes()))
    logs = open_logs([DATA / "federation_a.swf", packed])
    assert [log.spec.name for log in logs] == ["federation_a", "federation_b"]
    order = [(job.origin, job.number, job.submit) for job, _ in merged_records(logs)]
    assert order == [(0, 1, 0), (1, 1, 0), (1, 2, 5), (0, 2, 10), (0, 3, 20), (0, 4, 30),
                     (1, 3, 35)]


def test_a_bad_line_names_its_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.swf"
    path.write_text("; MaxProcs: 8\n1 0 0 10 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1 -1\n1 2 3\n")
    with pytest.raises(SwfError, match=r"bad\.swf, line 3: an SWF job line has 18 fields"):
        list(TraceLog(path).records(0))


def test_jobs_out_of_order_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "unsorted.swf"
    path.write_text("; MaxProcs: 8\n1 50 0 10 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1 -1\n"
                    "2 40 0 10 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1 -1\n")
    with pytest.raises(SwfError, match="job 2 is out of submit order"):
        list(TraceLog(path).records(0))


def _offset_log(tmp_path: Path) -> Path:
    """A log whose first job comes a year after its origin (as HPC2N's, 342,072 s in)."""
    year = 365 * 86400
    path = tmp_path / "late.swf"
    path.write_text("; MaxProcs: 8\n" + "".join(
        f"{n} {year + submit} 0 10 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1 -1\n"
        for n, submit in enumerate((0, 3600, 86400, 2 * 86400 + 5), start=1)))
    return path


def test_a_window_counts_from_the_logs_first_job(tmp_path: Path) -> None:
    log = TraceLog(_offset_log(tmp_path))
    first_day = [(job.number, job.submit) for job, _ in log.records(0, window_days=1)]
    # Counted from offset 0, a one-day window would hold no job of this log, silently.
    assert first_day == [(1, 0.0), (2, 3600.0)]
    second_day = [(job.number, job.submit) for job, _ in log.records(0, 1, start_days=1)]
    assert second_day == [(3, 0.0)]
    assert [job.number for job, _ in log.records(0, None, start_days=1)] == [3, 4]


def test_a_scaled_log_is_the_same_workload_on_a_bigger_machine(tmp_path: Path) -> None:
    path = _offset_log(tmp_path)
    plain, scaled = TraceLog(path), TraceLog(path, scale=100)
    assert scaled.spec.processors == 100 * plain.spec.processors == 800
    assert [job.procs for job, _ in scaled.records(0)] == [400] * 4
    with pytest.raises(ValueError, match="scale"):
        TraceLog(path, scale=0)
