"""sacct: how jobs ended, from slurmdbd. Pure.

`sacct -P` text, not `--json`: 22.05's JSON reports wrong exit codes (TESTBED-NOTES,
gotcha 5). `-X` keeps the allocation line only: its ExitCode is the batch script's.
With `--jobs` the time window starts at the Epoch (sacct(1), DEFAULT TIME WINDOW); a
lookup by name needs an explicit `--starttime`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import tzinfo

from adapters.base import JobStatus, NativeState
from adapters.batch.text import integer, lines, no_value, query_failed, signal_exit, timestamp
from adapters.reasons import Reason, StatusReason, because, scheduler_says
from adapters.slurm.arrays import unfold
from adapters.slurm.commands import SlurmCommands
from adapters.slurm.states import native_state
from adapters.slurm.status import valid_ids
from adapters.transport import CommandResult

FIELDS = "JobID,State,ExitCode,Start,End,Reason,JobName"
_COLUMNS = FIELDS.count(",") + 1


def accounting_command(commands: SlurmCommands, native_ids: Sequence[str]) -> tuple[str, ...]:
    ids = valid_ids(native_ids) or ["0"]
    return commands.with_epoch_times(
        commands.sacct, "--parsable2", "--noheader", "--allocations", "--allusers",
        f"--jobs={','.join(ids)}", f"--format={FIELDS}",
    )


def find_command(commands: SlurmCommands, tag: str, lookback_days: int) -> tuple[str, ...]:
    """Jobs of any user named `tag` that were active in the last `lookback_days` days."""
    return commands.with_epoch_times(
        commands.sacct, "--parsable2", "--noheader", "--allocations", "--allusers",
        f"--name={tag}", f"--starttime=now-{lookback_days}days", f"--format={FIELDS}",
    )


def exit_code(value: str) -> tuple[int | None, int]:
    """sacct's `code:signal` as a shell exit code (128 + signal when killed), and the signal."""
    code, _, sig = value.partition(":")
    number, signal = integer(code), integer(sig) or 0
    if signal:
        return signal_exit(signal), signal
    return number, 0


def ended_how(
    state: NativeState, final_reason: StatusReason | None, exit_field: str
) -> tuple[StatusReason | None, int | None]:
    """The reason and shell exit code of an allocation line in a final `state` (from
    `native_state`), given its `code:signal` ExitCode."""
    code, signal = exit_code(exit_field)
    why = final_reason
    if state is NativeState.FAILED and final_reason is Reason.NON_ZERO_EXIT and signal:
        why = because(Reason.KILLED_BY_SIGNAL, signal, " ")
    if state is not NativeState.COMPLETED and code == 0 and not signal:
        # Cancelled or timed-out allocations show 0:0 (seen on the testbed): no exit status.
        code = None
    return why, code


def row_status(fields: list[str], tz: tzinfo) -> JobStatus:
    native_id, raw_state, exit_field, start, end, reason = fields[:6]
    state, final_reason = native_state(raw_state)
    if state is NativeState.QUEUED:
        why: StatusReason | None = None if no_value(reason) else scheduler_says(reason)
        code = None
    elif state.is_final:
        why, code = ended_how(state, final_reason, exit_field)
    else:
        why, code = None, None
    return JobStatus(
        native_id=native_id,
        state=state,
        raw_state=raw_state,
        reason=why,
        exit_code=code,
        started_at=timestamp(start, tz),
        ended_at=timestamp(end, tz) if state.is_final else None,
    )


def parse_accounting(result: CommandResult, tz: tzinfo) -> dict[str, JobStatus]:
    """One status per job id sacct printed (the last line wins for a requeued job)."""
    if result.exit_status != 0:
        raise query_failed(result)
    found: dict[str, JobStatus] = {}
    for line in lines(result.stdout):
        fields = line.split("|", _COLUMNS - 1)
        if len(fields) == _COLUMNS:
            # An array's pending tasks come folded (`123_[4-19%4]`): one record each.
            for native_id in unfold(fields[0]):
                found[native_id] = row_status([native_id, *fields[1:]], tz)
    return found
