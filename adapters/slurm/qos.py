"""sacctmgr: the qualities of service slurmdbd knows. Pure.

`sacctmgr --noheader --parsable2 show qos format=Name` (sacctmgr(1)): one name a line.
"""

from __future__ import annotations

from adapters.batch.text import lines, query_failed
from adapters.slurm.commands import SlurmCommands
from adapters.transport import CommandResult


def qos_command(commands: SlurmCommands) -> tuple[str, ...]:
    return (commands.sacctmgr, "--noheader", "--parsable2", "show", "qos", "format=Name")


def parse_qos(result: CommandResult) -> list[str]:
    if result.exit_status != 0:
        raise query_failed(result)
    return [line.strip() for line in lines(result.stdout) if line.strip()]
