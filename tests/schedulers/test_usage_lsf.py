"""LSF usage records (adapters.lsf.usage) from lsb.acct JOB_FINISH records.

The fixture (fixtures/lsf/lsb_acct_usage.txt) is derived from IBM Spectrum LSF 10.1
lsb.acct(5) field by field, as its header says: the testbed runs no LSF cluster.
"""

from __future__ import annotations

from datetime import UTC, datetime

from adapters.base import NativeState
from adapters.lsf.commands import LsfCommands
from adapters.lsf.usage import parse_usage, tokens, usage_command
from adapters.reasons import Reason, because
from adapters.transport import CommandResult
from tests.schedulers.recorded import result

C, F, X = NativeState.COMPLETED, NativeState.FAILED, NativeState.CANCELLED
KILLED = because(Reason.KILLED_BY_SIGNAL, 9, " ")

# (job, run, state, reason, exit code, elapsed, cores, nodes)
EXPECTED = [
    ("301", 0, C, None, 0, 600, 2, 1),
    ("302", 0, F, Reason.NON_ZERO_EXIT, 3, 1, 1, 1),
    ("303", 0, F, KILLED, 137, 60, 1, 1),
    ("304", 0, X, Reason.CANCELLED_BEFORE_START, None, 0, 0, 0),
    ("305", 0, C, None, 0, 3600, 8, 2),
    ("306", 0, F, KILLED, 137, 120, 1, 1),
    ("306", 1, C, None, 0, 300, 1, 1),
]


def test_job_finish_records() -> None:
    records = sorted(parse_usage(result("lsf", "lsb_acct_usage.txt")), key=lambda r: r.key)
    assert [(r.native_id, r.run, r.state, r.reason, r.exit_code, r.elapsed, r.cores,
             r.nodes) for r in records] == EXPECTED
    first = records[0]
    assert first.started_at == datetime.fromtimestamp(1763790005, UTC)
    assert first.ended_at == datetime.fromtimestamp(1763790605, UTC)
    assert first.source == "lsb.acct" and first.raw.startswith('"JOB_FINISH" "10.108" ')
    assert records[3].started_at is None


def test_quoted_fields_keep_blanks_and_doubled_quotes() -> None:
    assert tokens('"JOB_FINISH" "10.1" 5 "sh -c ""exit 3""" "" 7') == [
        "JOB_FINISH", "10.1", "5", 'sh -c "exit 3"', "", "7"]


def test_a_malformed_line_is_skipped() -> None:
    answer = CommandResult(("grep",), 0, b'"JOB_FINISH" "10.1" 5 12\n', b"")
    assert parse_usage(answer) == []


def test_the_command_matches_job_finish_records_of_lsf_ids_only() -> None:
    # An array element's record is its job's (issue 16): 302[4] is looked up as 302.
    assert usage_command(LsfCommands(), ["301", "302[4]", "x|y", "305"], "/lsf/logdir") == (
        "grep", "-h", "-r", "-E", "--include=lsb.acct*", "-e",
        '^"JOB_FINISH" "[^"]*" [0-9]+ (301|302|305) ', "--", "/lsf/logdir")
    assert usage_command(LsfCommands(), ["x|y", "1;2"], "/lsf/logdir") is None
