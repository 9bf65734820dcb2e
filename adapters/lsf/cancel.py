"""bkill. Pure. LSF answers "Job <N> is being terminated", "Job <N>: Job has already
finished" or "Job <N>: No matching job found" (bkill(1); the latter two are also what
PSI/J's LSF executor tolerates)."""

from __future__ import annotations

from adapters.errors import UnknownJob
from adapters.lsf.commands import LsfCommands
from adapters.lsf.status import JOB_ID
from adapters.scheduler_text import message, query_failed
from adapters.transport import CommandResult


def cancel_command(commands: LsfCommands, native_id: str) -> tuple[str, ...]:
    if not JOB_ID.matches(native_id):
        raise UnknownJob(f"{native_id!r} is not an LSF job id")
    return (commands.bkill, native_id)


def parse_cancel(result: CommandResult, native_id: str) -> None:
    said = message(result)
    if "already finished" in said.lower():
        return
    if "no matching job" in said.lower():
        raise UnknownJob(f"LSF does not know job {native_id}: {said}")
    if result.exit_status != 0:
        raise query_failed(result)
