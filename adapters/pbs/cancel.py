"""qdel. Pure. PBS says "qdel: Unknown Job Id <id>" for an id it does not know and
"qdel: Job has finished" for a finished one (kept with job history)."""

from __future__ import annotations

from adapters.errors import UnknownJob
from adapters.pbs.commands import PbsCommands
from adapters.pbs.submit import JOB_ID
from adapters.scheduler_text import message, query_failed
from adapters.transport import CommandResult

# Already over, or ending: the cancel is idempotent.
_OVER = ("Job has finished", "Request invalid for state of job")


def cancel_command(commands: PbsCommands, native_id: str) -> tuple[str, ...]:
    if not JOB_ID.matches(native_id):
        raise UnknownJob(f"{native_id!r} is not a PBS job id")
    return (commands.qdel, native_id)


def parse_cancel(result: CommandResult, native_id: str) -> None:
    if result.exit_status == 0:
        return
    said = message(result)
    if any(marker in said for marker in _OVER):
        return
    if "Unknown Job Id" in said:
        raise UnknownJob(f"PBS does not know job {native_id}: {said}")
    raise query_failed(result)
