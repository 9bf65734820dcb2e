"""SWF reader: a hand-written synthetic log (tests/scheduling/data/synthetic.swf), gzipped or
not, with or without its header, and the shared Parallel Workloads Archive logs when present."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from gateway.scheduling.swf import SwfError, iter_jobs, machine_size, parse_job, read_header

DATA = Path(__file__).parent / "data" / "synthetic.swf"
# The shared Parallel Workloads Archive logs live beside the checkout (../shared/traces).
ROOT = Path(__file__).resolve().parents[2]
SHARED = next(
    (d for d in (ROOT.parent / "shared" / "traces", ROOT.parent.parent / "shared" / "traces")
     if d.is_dir()),
    ROOT.parent / "shared" / "traces",
)


def test_header_fields_and_machine_size() -> None:
    header = read_header(DATA)
    assert header.max_procs == 64
    assert header.unix_start_time == 1000000000
    assert header.fields["MaxNodes"] == ["16"]
    assert machine_size(DATA, header) == 64


def test_jobs_stream_in_file_order_with_unknowns() -> None:
    jobs = list(iter_jobs(DATA))
    assert [job.number for job in jobs] == list(range(1, 13))
    third = jobs[2]
    assert (third.submit, third.wait, third.run, third.procs) == (120, 1680, 600, 32)
    assert third.start == 1800
    # Job 5: allocation unknown, so `procs` falls back to the request.
    assert jobs[4].allocated_procs == -1 and jobs[4].procs == 4
    assert jobs[8].requested_time == -1
    assert jobs[10].avg_cpu == 12.5


def test_gzipped_log_reads_the_same(tmp_path: Path) -> None:
    packed = tmp_path / "synthetic.swf.gz"
    packed.write_bytes(gzip.compress(DATA.read_bytes()))
    assert list(iter_jobs(packed)) == list(iter_jobs(DATA))
    assert read_header(packed) == read_header(DATA)


def test_without_header_the_machine_is_the_largest_allocation(tmp_path: Path) -> None:
    bare = tmp_path / "bare.swf"
    bare.write_text("".join(line for line in DATA.read_text().splitlines(True)
                            if not line.startswith(";")))
    header = read_header(bare)
    assert header.max_procs is None and header.fields == {}
    assert machine_size(bare) == 64
    assert len(list(iter_jobs(bare))) == 12


def test_unknown_wait_has_no_start() -> None:
    job = parse_job("1 10 -1 -1 4 -1 -1 4 60 -1 5 1 1 1 1 -1 -1 -1")
    assert job.start == -1


def test_an_unknown_user_is_no_account() -> None:
    known = parse_job("1 10 0 5 4 -1 -1 4 60 -1 1 17 1 1 1 -1 -1 -1")
    unknown = parse_job("1 10 0 5 4 -1 -1 4 60 -1 1 -1 1 1 1 -1 -1 -1")
    assert (known.account, unknown.account) == ("17", None)


@pytest.mark.parametrize("line", ["1 2 3", "1 0 0 10 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1 x"])
def test_malformed_lines_are_refused(line: str) -> None:
    with pytest.raises(SwfError):
        parse_job(line)


@pytest.mark.parametrize("value", ["nan", "1e999", "-inf"])
def test_a_field_that_is_not_finite_is_refused_with_its_line(tmp_path: Path, value: str) -> None:
    log = tmp_path / "bad.swf"
    log.write_text("; MaxProcs: 8\n1 0 0 10 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1 -1\n"
                   f"2 5 0 10 4 -1 -1 4 {value} -1 1 1 1 1 1 -1 -1 -1\n")
    with pytest.raises(SwfError, match=rf"bad.swf, line 3: field 9 of an SWF job line must "
                                       rf"be a finite number, not '{value}'"):
        list(iter_jobs(log))


def test_headerless_log_without_processor_counts_is_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.swf"
    empty.write_text("; only a comment\n")
    with pytest.raises(SwfError, match="no MaxProcs"):
        machine_size(empty)


@pytest.mark.skipif(not SHARED.is_dir(), reason="shared traces not present")
def test_shared_kth_log() -> None:
    log = SHARED / "KTH-SP2-1996-2.1-cln.swf.gz"
    header = read_header(log)
    assert (header.max_procs, header.unix_start_time) == (100, 843480031)
    count = 0
    last_submit = -1
    for job in iter_jobs(log):
        count += 1
        assert job.submit >= last_submit
        last_submit = job.submit
    assert count == 28489
