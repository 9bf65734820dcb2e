"""qdel. Pure.

qmaster answers "<user> has registered the job <id> for deletion" (running job: qacct
will record how it ended) or "<user> has deleted job <id>" (pending job: no accounting
record at all), and `denied: job "<id>" does not exist` for an unknown or finished job.
"""

from __future__ import annotations

from adapters.errors import UnknownJob
from adapters.scheduler_text import message, query_failed
from adapters.sge.commands import SgeCommands
from adapters.sge.status import JOB_ID
from adapters.transport import CommandResult


def cancel_command(commands: SgeCommands, native_id: str) -> tuple[str, ...]:
    if not JOB_ID.matches(native_id):
        raise UnknownJob(f"{native_id!r} is not a Grid Engine job id")
    return (commands.qdel, native_id)


def parse_cancel(result: CommandResult, native_id: str) -> None:
    said = message(result)
    if "does not exist" in said:
        raise UnknownJob(f"Grid Engine does not know job {native_id}: {said}")
    if result.exit_status != 0:
        raise query_failed(result)
