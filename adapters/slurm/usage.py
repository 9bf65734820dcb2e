"""sacct: usage records, one per run of a job (a requeued job ran more than once). Pure.

`sacct --parsable2 --allocations --duplicates` (sacct(1), https://slurm.schedmd.com/sacct.html):
`--allocations` keeps each run's allocation line, `--duplicates` every run of a requeued
job instead of only the latest (each run is a row of its own, with its own Submit time;
seen on the testbed: a `scontrol requeue`d job has a REQUEUED row, then a PENDING one).
Runs count from 0 in the order of their rows by Submit, then Start (`--duplicates` would
also list an older job that had the same id before the cluster's ids were reset: the
gateway asks only about jobs it submitted recently, which such a reset would already have
broken). Times are epoch seconds (SLURM_TIME_FORMAT=%s); ElapsedRaw is the run's wall-clock
seconds; AllocNodes is 0 for a run that never held an allocation (cancelled while pending:
sacct still prints a Start equal to its End and AllocCPUS 1, seen on the testbed);
AllocTRES lists what the run held (`billing=2,cpu=2,mem=512M,node=1,gres/gpu=1`), empty
when it held nothing; ReqMem is what it asked for.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import tzinfo

from adapters.batch.text import integer, lines, query_failed, timestamp
from adapters.slurm.accounting import ended_how
from adapters.slurm.commands import SlurmCommands
from adapters.slurm.states import run_state
from adapters.slurm.status import valid_ids
from adapters.transport import CommandResult
from adapters.usage import UsageRecord

FIELDS = "JobID,State,ExitCode,Submit,Start,End,ElapsedRaw,AllocCPUS,AllocNodes,ReqMem,AllocTRES"
_COLUMNS = FIELDS.count(",") + 1
# Ids per sacct command: a few thousand characters of `--jobs=`, far below ARG_MAX.
IDS_PER_COMMAND = 500
# A size as sacct prints it (ReqMem, TRES mem): a number, a unit, and before 21.08 an `n`
# (per node) or `c` (per CPU) suffix.
_SIZE = re.compile(r"(?P<number>[0-9]+(?:\.[0-9]+)?)(?P<unit>[KMGTP]?)[nc]?")
_MB_PER_UNIT = {"K": 1 / 1024, "": 1, "M": 1, "G": 1024, "T": 1024**2, "P": 1024**3}


def usage_commands(commands: SlurmCommands, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
    """One sacct per `IDS_PER_COMMAND` valid ids ([] when none is valid)."""
    ids = list(dict.fromkeys(valid_ids(native_ids)))
    return [
        commands.with_epoch_times(
            commands.sacct, "--parsable2", "--noheader", "--allocations", "--allusers",
            "--duplicates", f"--jobs={','.join(ids[at:at + IDS_PER_COMMAND])}",
            f"--format={FIELDS}",
        )
        for at in range(0, len(ids), IDS_PER_COMMAND)
    ]


def parse_usage(result: CommandResult, tz: tzinfo) -> list[UsageRecord]:
    """A record for each run that ended; runs still waiting or running are left out."""
    if result.exit_status != 0:
        raise query_failed(result)
    runs: dict[str, list[tuple[tuple[int, int], list[str], str]]] = {}
    for line in lines(result.stdout):
        fields = line.split("|", _COLUMNS - 1)
        if len(fields) == _COLUMNS:
            order = (integer(fields[3]) or 0, integer(fields[4]) or 0)
            runs.setdefault(fields[0], []).append((order, fields, line))
    records = []
    for rows in runs.values():
        rows.sort(key=lambda row: row[0])
        for run, (_, fields, line) in enumerate(rows):
            record = _record(fields, run, line, tz)
            if record is not None:
                records.append(record)
    return records


def _record(fields: list[str], run: int, line: str, tz: tzinfo) -> UsageRecord | None:
    (native_id, raw_state, exit_field, _submit, start, end, elapsed, cpus, alloc_nodes, req_mem,
     tres) = fields
    state, final_reason = run_state(raw_state)
    ended_at = timestamp(end, tz)
    if not state.is_final or ended_at is None:
        return None
    reason, code = ended_how(state, final_reason, exit_field)
    nodes = integer(alloc_nodes) or 0
    held = nodes > 0
    allocated = _tres(tres)
    memory = allocated.get("mem") or (req_mem if held else None)
    return UsageRecord(
        native_id=native_id,
        run=run,
        state=state,
        reason=reason,
        exit_code=code,
        started_at=timestamp(start, tz) if held else None,
        ended_at=ended_at,
        elapsed=max(integer(elapsed) or 0, 0) if held else 0,
        cores=(integer(allocated.get("cpu")) or integer(cpus) or 0) if held else 0,
        nodes=nodes,
        source="sacct",
        raw=line,
        memory_mb=_megabytes(memory),
        gpus=_gpus(allocated),
    )


def _tres(value: str) -> dict[str, str]:
    """`cpu=2,mem=512M,gres/gpu=1` as a dict."""
    pairs = (item.partition("=") for item in value.split(",") if "=" in item)
    return {key.strip(): count.strip() for key, _, count in pairs}


def _megabytes(value: str | None) -> int | None:
    match = _SIZE.fullmatch(value.strip()) if value else None
    if match is None:
        return None
    return round(float(match["number"]) * _MB_PER_UNIT[match["unit"]])


def _gpus(allocated: dict[str, str]) -> int:
    """`gres/gpu=N`; Slurm also lists the typed counts (`gres/gpu:a100=N`), which only
    add up to it, so they count only when the untyped total is missing."""
    total = integer(allocated.get("gres/gpu"))
    if total is not None:
        return total
    return sum(integer(count) or 0 for key, count in allocated.items()
               if key.startswith("gres/gpu:"))
