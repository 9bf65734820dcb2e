"""Slurm usage records (adapters.slurm.usage), table-driven on recorded sacct outputs.

Fixtures (fixtures/slurm/): `real_sacct_usage*.txt` were recorded from the testbed's Slurm
22.05.8 site (roadrunner, with slurmdbd) over SSH, running this module's own argv; each
header says which jobs they hold. `sacct_usage_failures.txt` is derived in the same format
from sacct(1)'s job state codes, for the ends the testbed cannot produce.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from adapters.base import NativeState
from adapters.errors import SiteUnavailable
from adapters.reasons import Reason
from adapters.slurm.commands import SlurmCommands
from adapters.slurm.usage import FIELDS, IDS_PER_COMMAND, parse_usage, usage_commands
from adapters.transport import CommandResult
from tests.schedulers.recorded import result

C, F, X = NativeState.COMPLETED, NativeState.FAILED, NativeState.CANCELLED

# (job, run, state, reason, exit code, elapsed, cores, nodes)
REAL = [
    ("1", 0, C, None, 0, 2, 1, 1),
    ("2", 0, F, Reason.NON_ZERO_EXIT, 3, 0, 1, 1),
    ("3", 0, C, None, 0, 4, 2, 1),
    # Cancelled while pending: sacct says Start = End and AllocCPUS 1, but no allocation.
    ("4", 0, X, None, None, 0, 0, 0),
    # Killed at its 1-minute limit (and Slurm's kill wait): 79 s of the site's own time.
    ("5", 0, F, Reason.TIMEOUT, None, 79, 1, 1),
    # `scontrol requeue` after 7 s, then the second run to the end.
    ("6", 0, X, Reason.REQUEUED, None, 7, 1, 1),
    ("6", 1, C, None, 0, 20, 1, 1),
    # scancel while running: charged for the time it held its core.
    ("9", 0, X, None, None, 6, 1, 1),
]

DERIVED = [
    ("20", 0, F, Reason.BOOT_FAIL, None, 0, 4, 1),
    ("21", 0, F, Reason.NODE_FAIL, None, 300, 8, 2),
    ("21", 1, C, None, 0, 100, 8, 2),
    ("22", 0, F, Reason.PREEMPTED, 143, 120, 2, 1),
    ("23", 0, F, Reason.OUT_OF_MEMORY, 137, 60, 1, 1),
    ("24", 0, C, None, 0, 60, 4, 1),
]


def _table(name: str) -> list[tuple[object, ...]]:
    records = parse_usage(result("slurm", name), UTC)
    return [(r.native_id, r.run, r.state, r.reason, r.exit_code, r.elapsed, r.cores,
             r.nodes) for r in records]


def test_every_ended_run_of_the_recorded_jobs() -> None:
    assert _table("real_sacct_usage.txt") == REAL


def test_ends_the_testbed_cannot_produce() -> None:
    # Job 22's second run is still running: left out.
    assert _table("sacct_usage_failures.txt") == DERIVED


def test_runs_not_over_are_left_out() -> None:
    # Job 11 runs, job 12 waits: only the requeued job 6's two ended runs.
    assert [(r.native_id, r.run) for r in parse_usage(
        result("slurm", "real_sacct_usage_unfinished.txt"), UTC)] == [("6", 0), ("6", 1)]


def test_times_and_sizes_are_the_sites_own() -> None:
    records = {r.key: r for r in parse_usage(result("slurm", "real_sacct_usage.txt"), UTC)}
    requeued = records[("6", 1)]
    assert requeued.started_at == datetime.fromtimestamp(1795569899, UTC)
    assert requeued.ended_at == datetime.fromtimestamp(1795569919, UTC)
    assert requeued.source == "sacct"
    assert requeued.raw == "6|COMPLETED|0:0|1795569767|1795569899|1795569919|20|1|1|512M|" \
                           "billing=1,cpu=1,node=1"
    # No memory in AllocTRES on the testbed: the requested 512M.
    assert requeued.memory_mb == 512
    never_ran = records[("4", 0)]
    assert never_ran.started_at is None and never_ran.memory_mb is None
    assert never_ran.ended_at == datetime.fromtimestamp(1795569752, UTC)


def test_memory_and_gpus_from_alloc_tres() -> None:
    records = {r.key: r for r in parse_usage(result("slurm", "sacct_usage_failures.txt"), UTC)}
    assert (records[("24", 0)].memory_mb, records[("24", 0)].gpus) == (16384, 2)
    assert (records[("21", 1)].memory_mb, records[("21", 1)].gpus) == (16384, 0)
    assert records[("23", 0)].memory_mb == 500


def test_the_command_asks_every_run_of_valid_ids_only() -> None:
    assert usage_commands(SlurmCommands(), ["6", "1; rm -rf /", "7_2", "6"]) == [(
        "env", "SLURM_TIME_FORMAT=%s", "sacct", "--parsable2", "--noheader", "--allocations",
        "--allusers", "--duplicates", "--jobs=6,7_2", f"--format={FIELDS}")]
    assert usage_commands(SlurmCommands(), ["x", "1\n"]) == []


def test_many_ids_are_split_into_several_commands() -> None:
    ids = [str(n) for n in range(1, IDS_PER_COMMAND + 3)]
    commands = usage_commands(SlurmCommands(), ids)
    assert len(commands) == 2
    assert commands[1][-2] == f"--jobs={IDS_PER_COMMAND + 1},{IDS_PER_COMMAND + 2}"


def test_a_failed_query_is_a_site_problem() -> None:
    with pytest.raises(SiteUnavailable):
        parse_usage(result("slurm", "real_sacct_disabled.txt"), UTC)
    with pytest.raises(SiteUnavailable, match="cannot be run"):
        parse_usage(CommandResult(("sacct",), 127, b"", b"sacct: not found"), UTC)
