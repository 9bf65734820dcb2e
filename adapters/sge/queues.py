"""qstat -g c: the cluster queue summary. Pure.

Columns (qstat(1), "Cluster Queue Format (with -g c)"): CLUSTER QUEUE, CQLOAD, USED, RES,
AVAIL, TOTAL, aoACDS, cdsuE; after a header line and a line of dashes.
"""

from __future__ import annotations

from adapters.batch.text import integer, lines, query_failed
from adapters.batch.types import QueueInfo
from adapters.sge.commands import SgeCommands
from adapters.transport import CommandResult


def queues_command(commands: SgeCommands) -> tuple[str, ...]:
    return (commands.qstat, "-g", "c")


def parse_queues(result: CommandResult, default_queue: str | None) -> list[QueueInfo]:
    if result.exit_status != 0:
        raise query_failed(result)
    found = []
    for line in lines(result.stdout):
        fields = line.split()
        if len(fields) < 8 or fields[0] == "CLUSTER" or set(line) <= {"-"}:
            continue
        name, _load, used, _reserved, avail, total, _unavailable, broken = fields[:8]
        slots, unusable = integer(total) or 0, integer(broken) or 0
        found.append(QueueInfo(
            name=name,
            default=name == default_queue,
            # cdsuE: slots in a disabled, suspended, unknown or error state.
            available=slots > unusable,
            state=f"{used} of {total} slots used",
            cpus_total=integer(total),
            cpus_idle=integer(avail),
        ))
    return found
