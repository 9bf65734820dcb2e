"""squeue: the state of jobs slurmctld still holds, many ids in one call. Pure.

Format `%i|%T|%r|%S|%j` (id, extended state, reason, start time, name; the name last
so a `|` in it cannot shift the other fields). `--states=all` also lists jobs that just
ended; their final word still comes from sacct (see `adapters.batch.adapter`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo

from adapters.base import JobStatus, NativeState
from adapters.batch.text import lines, no_value, query_failed, text, timestamp
from adapters.reasons import StatusReason, scheduler_says
from adapters.slurm.arrays import status_ids, unfold
from adapters.slurm.commands import SlurmCommands
from adapters.slurm.states import native_state
from adapters.transport import CommandResult
from rules.text import TextRule

FORMAT = "%i|%T|%r|%S|%j"
# Job ids as squeue and sacct print them (plain, array task `7_3`, het component `7+1`).
JOB_ID = TextRule("Slurm job id", r"[0-9]+(?:_[0-9]+|\+[0-9]+)?", "digits, e.g. 123 or 123_4")
# squeue -j with one id Slurm no longer knows fails instead of printing nothing (22.05).
_PURGED = "Invalid job id specified"


def valid_ids(native_ids: Sequence[str]) -> list[str]:
    """Only ids Slurm could have issued: anything else is never put on a command line."""
    return [i for i in native_ids if JOB_ID.matches(i)]


def status_command(commands: SlurmCommands, native_ids: Sequence[str]) -> tuple[str, ...]:
    """One squeue for many jobs; an array's tasks through their array's id (its pending
    tasks come folded in one line: adapters.slurm.arrays)."""
    ids = status_ids(valid_ids(native_ids)) or ["0"]
    return commands.with_epoch_times(
        commands.squeue, "--noheader", "--states=all", f"--jobs={','.join(ids)}",
        f"--format={FORMAT}",
    )


def find_command(commands: SlurmCommands, tag: str) -> tuple[str, ...]:
    """Jobs slurmctld holds with this name, of any user and state."""
    return commands.with_epoch_times(
        commands.squeue, "--noheader", "--states=all", f"--name={tag}", f"--format={FORMAT}",
    )


def row_status(fields: list[str], tz: tzinfo) -> JobStatus:
    native_id, raw_state, reason, start = fields[0], fields[1], fields[2], fields[3]
    state, final_reason = native_state(raw_state)
    started = None
    if state is not NativeState.QUEUED:
        # For a pending job %S is the expected start, not a start.
        started = timestamp(start, tz)
    if state is NativeState.QUEUED:
        why: StatusReason | None = None if no_value(reason) else scheduler_says(reason)
    elif state.is_final:
        why = final_reason
    else:
        why = None
    exit_code = 0 if state is NativeState.COMPLETED else None
    return JobStatus(native_id, state, raw_state, why, exit_code, started)


def parse_status(
    result: CommandResult, native_ids: Sequence[str], tz: tzinfo
) -> dict[str, JobStatus]:
    """Statuses of the requested ids squeue listed."""
    if result.exit_status != 0:
        if _PURGED in text(result.stderr):
            return {}
        raise query_failed(result)
    wanted = set(native_ids)
    found: dict[str, JobStatus] = {}
    for line in lines(result.stdout):
        fields = line.split("|", 4)
        if len(fields) != 5:
            continue
        for native_id in unfold(fields[0]):
            if native_id in wanted:
                found[native_id] = row_status([native_id, *fields[1:]], tz)
    return found
