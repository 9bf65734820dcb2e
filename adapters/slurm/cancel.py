"""scancel. Pure."""

from __future__ import annotations

from adapters.errors import UnknownJob
from adapters.scheduler_text import message, query_failed
from adapters.slurm.commands import SlurmCommands
from adapters.slurm.status import JOB_ID
from adapters.transport import CommandResult

# Older releases say so for an id they do not know (22.05 prints nothing, exit 0).
_UNKNOWN = "Invalid job id specified"
# Cancelling a job that is ending or over is not an error: the cancel is idempotent.
_OVER = ("already completing or completed", "Job/step already completing")


def cancel_command(commands: SlurmCommands, native_id: str) -> tuple[str, ...]:
    if not JOB_ID.matches(native_id):
        raise UnknownJob(f"{native_id!r} is not a Slurm job id")
    return (commands.scancel, native_id)


def parse_cancel(result: CommandResult, native_id: str) -> None:
    if result.exit_status == 0:
        return
    said = message(result)
    if any(marker in said for marker in _OVER):
        return
    if _UNKNOWN in said:
        raise UnknownJob(f"Slurm does not know job {native_id}: {said}")
    raise query_failed(result)
