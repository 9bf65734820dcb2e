"""PBS usage records (adapters.pbs.usage) from accounting log E and R records.

Fixtures (fixtures/pbs/): `accounting_usage.txt` (PBS Professional / OpenPBS) and
`torque_accounting_usage.txt` (TORQUE) are derived from the documentation and source their
headers cite (OpenPBS src/server/accounting.c and src/include/job.h; the TORQUE
Administrator Guide's "Accounting Records"): the testbed runs no PBS server.
"""

from __future__ import annotations

from datetime import UTC, datetime

from adapters.base import NativeState
from adapters.pbs.commands import PbsCommands
from adapters.pbs.usage import parse_usage, usage_command
from adapters.reasons import Reason, because
from adapters.transport import CommandResult
from tests.schedulers.recorded import result

C, F, X = NativeState.COMPLETED, NativeState.FAILED, NativeState.CANCELLED

# (job, run, state, reason, exit code, elapsed, cores, nodes)
PBS_PRO = [
    ("201.pbsserver", 0, C, None, 0, 600, 2, 1),
    ("202.pbsserver", 0, F, Reason.TIMEOUT, None, 302, 2, 1),
    # qrerun: the R record is the first run, the E record (run_count=2) the second.
    ("203.pbsserver", 0, X, Reason.REQUEUED, None, 120, 2, 1),
    ("203.pbsserver", 1, C, None, 0, 300, 2, 1),
    # 204 was deleted while queued: a D record, no run, nothing to charge.
    ("205.pbsserver", 0, X, because(Reason.DELETED, "by tbuser@login1", " "), 143, 61, 2, 1),
    ("206.pbsserver", 0, F, Reason.NON_ZERO_EXIT, 3, 1, 2, 1),
    ("207.pbsserver", 0, F,
     because(Reason.FAILED_AT_START, "JOB_EXEC_FAIL1: job exec failed, before files, no retry"),
     None, 0, 4, 1),
    ("208.pbsserver", 0, C, None, 0, 3600, 8, 2),
]

TORQUE = [
    ("11923.napali", 0, C, None, 0, 14, 12, 2),
    ("11930.napali", 0, F, Reason.NON_ZERO_EXIT, 3, 146, 4, 1),
    ("407.ign1.zeta2.org", 0, X, because(Reason.DELETED, "by guest@ign1.zeta2.org", " "), 143,
     71, 1, 1),
]


def _table(name: str) -> list[tuple[object, ...]]:
    records = sorted(parse_usage(result("pbs", name)), key=lambda r: r.key)
    return [(r.native_id, r.run, r.state, r.reason, r.exit_code, r.elapsed, r.cores,
             r.nodes) for r in records]


def test_pbs_professional_records() -> None:
    assert _table("accounting_usage.txt") == PBS_PRO


def test_torque_records() -> None:
    assert _table("torque_accounting_usage.txt") == TORQUE


def test_times_memory_and_gpus() -> None:
    records = {r.key: r for r in parse_usage(result("pbs", "accounting_usage.txt"))}
    normal = records[("201.pbsserver", 0)]
    assert normal.started_at == datetime.fromtimestamp(1763780010, UTC)
    assert normal.ended_at == datetime.fromtimestamp(1763780610, UTC)
    assert (normal.memory_mb, normal.gpus, normal.source) == (2048, 0, "pbs-accounting")
    assert normal.raw.startswith("11/22/2025 03:03:30;E;201.pbsserver;user=tbuser ")
    assert records[("208.pbsserver", 0)].gpus == 2


def test_the_existing_accounting_fixture_reads_as_usage_too() -> None:
    # accounting_records.txt (for status): 101 ran 8 s on 2 cores; 110 was deleted while
    # queued (no run); 111 was deleted after it had run.
    table = _table("accounting_records.txt")
    assert [(job, run, state, elapsed, cores) for job, run, state, _, _, elapsed, cores, _
            in table] == [("101.pbsserver", 0, C, 8, 2), ("111.pbsserver", 0, X, 8, 2)]


def test_the_command_greps_r_e_and_d_records_of_valid_ids() -> None:
    assert usage_command(PbsCommands(), ["201.pbsserver", "x;y"], "/acct") == (
        "grep", "-h", "-r", "-F", "-e", ";R;201.pbsserver;", "-e", ";E;201.pbsserver;",
        "-e", ";D;201.pbsserver;", "--", "/acct")


def test_no_match_is_no_record() -> None:
    assert parse_usage(CommandResult(("grep",), 1, b"", b"")) == []
