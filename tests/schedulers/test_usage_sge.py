"""Grid Engine usage records (adapters.sge.usage), table-driven on recorded qacct outputs.

Fixtures (fixtures/sge/real_qacct_usage_*.txt) were recorded from the testbed's Grid Engine
8.1.9 site (galaxy) over SSH, running this module's own argv (`qacct -m -j ID`); each
header says how its job was submitted and ended. `qacct_mpi_pe.txt` is real qacct output of
an accounting file built per accounting(5) (see test_sge.py).
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adapters.base import NativeState
from adapters.errors import SiteUnavailable
from adapters.reasons import Reason, because
from adapters.sge.commands import SgeCommands
from adapters.sge.usage import parse_usage, usage_commands
from tests.schedulers.recorded import result

C, F, X = NativeState.COMPLETED, NativeState.FAILED, NativeState.CANCELLED

# fixture -> [(job, run, state, reason, exit code, elapsed, cores)]
CASES = {
    "real_qacct_usage_normal.txt": [("1", 0, C, None, 0, 2, 1)],
    "real_qacct_usage_2core.txt": [("3", 0, C, None, 0, 4, 2)],
    # qdel while pending: Grid Engine keeps no record, so there is nothing to charge.
    "real_qacct_usage_pending_deleted.txt": [],
    # h_rt=5: qmaster kills it (failed 37) after 6 s of wall clock.
    "real_qacct_usage_h_rt.txt": [("5", 0, F, Reason.TIMEOUT, 137, 6, 1)],
    # qmod -rj: the first run's record is written at the rescheduling, with no times.
    "real_qacct_usage_requeued.txt": [("6", 0, X, Reason.REQUEUED, None, 0, 1),
                                      ("6", 1, C, None, 0, 20, 1)],
    "real_qacct_usage_exit3.txt": [("7", 0, F, Reason.NON_ZERO_EXIT, 3, 0, 1)],
    # The shepherd could not open the output file: the job itself never started.
    "real_qacct_usage_failed_start.txt": [
        ("8", 0, F, because(Reason.FAILED_AT_START, "failed 26: opening input/output file"),
         None, 0, 1)],
    "real_qacct_usage_qdel_running.txt": [
        ("9", 0, F, because(Reason.KILLED_BY_SIGNAL, 9, " "), 137, 6, 1)],
}


@pytest.mark.parametrize("fixture", sorted(CASES))
def test_each_run_of_the_recorded_jobs(fixture: str) -> None:
    records = parse_usage(result("sge", fixture), UTC)
    assert [(r.native_id, r.run, r.state, r.reason, r.exit_code, r.elapsed, r.cores)
            for r in records] == CASES[fixture]
    assert all(r.source == "qacct" and r.nodes == 1 for r in records)


def test_times_are_the_sites_local_time() -> None:
    # qacct prints the site's local time; the testbed runs in UTC.
    [record] = parse_usage(result("sge", "real_qacct_usage_2core.txt"), UTC)
    assert record.started_at == datetime(2026, 11, 25, 1, 22, 48, tzinfo=UTC)
    assert record.ended_at == datetime(2026, 11, 25, 1, 22, 52, tzinfo=UTC)
    assert record.raw.splitlines()[0].split() == ["qname", "all.q"]
    assert "granted_pe   mpi" in record.raw


def test_a_rescheduled_run_without_times() -> None:
    first, second = parse_usage(result("sge", "real_qacct_usage_requeued.txt"), UTC)
    assert (first.started_at, first.ended_at) == (None, None)
    assert second.started_at == datetime(2026, 11, 25, 1, 22, 54, tzinfo=UTC)
    assert first.key != second.key


def test_a_parallel_job_counts_its_slots() -> None:
    records = parse_usage(result("sge", "qacct_mpi_pe.txt"), UTC)
    assert [(r.native_id, r.run, r.state, r.cores) for r in records] == [("15", 0, C, 2)]


def test_one_command_per_valid_id() -> None:
    assert usage_commands(SgeCommands(), ["5", "5", "x; ls", "6"]) == [
        ("qacct", "-m", "-j", "5"), ("qacct", "-m", "-j", "6")]


def test_a_failed_query_is_a_site_problem() -> None:
    with pytest.raises(SiteUnavailable):
        parse_usage(result("sge", "qstat_qmaster_down.txt"), UTC)
