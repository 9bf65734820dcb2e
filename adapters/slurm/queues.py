"""sinfo: partitions, their limits and load. Pure.

Format `%P|%a|%l|%s|%D|%F|%C|%c|%m|%d` (sinfo(1) "-o" field specifications): partition
(`*` marks the default), availability, time limit, job size in nodes (`min-max`), node
count, nodes and CPUs as allocated/idle/other/total, CPUs, memory (MB) and temporary disk
(MB, TmpDisk) per node. sinfo prints one line per group of alike nodes; lines of one
partition are added up.
"""

from __future__ import annotations

from adapters.batch.text import duration, integer, lines, query_failed
from adapters.batch.types import QueueInfo
from adapters.slurm.commands import SlurmCommands
from adapters.transport import CommandResult

FORMAT = "%P|%a|%l|%s|%D|%F|%C|%c|%m|%d"
_FIELDS = FORMAT.count("|") + 1


def queues_command(commands: SlurmCommands) -> tuple[str, ...]:
    return (commands.sinfo, "--noheader", f"--format={FORMAT}")


def _count(value: str) -> int | None:
    """`2` or `2+` (some nodes have more)."""
    return integer(value.rstrip("+"))


def _aiot(value: str) -> tuple[int | None, int | None]:
    """Idle and total from `allocated/idle/other/total`."""
    parts = value.split("/")
    if len(parts) != 4:
        return None, None
    return integer(parts[1]), integer(parts[3])


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _max(a: int | None, b: int | None) -> int | None:
    return b if a is None else a if b is None else max(a, b)


def parse_queues(result: CommandResult) -> list[QueueInfo]:
    if result.exit_status != 0:
        raise query_failed(result)
    merged: dict[str, QueueInfo] = {}
    for line in lines(result.stdout):
        fields = line.split("|")
        if len(fields) != _FIELDS:
            continue
        name, avail, limit, size, nodes, node_states, cpu_states, cpus, memory, tmp = fields
        default = name.endswith("*")
        name = name.rstrip("*")
        nodes_idle, nodes_total = _aiot(node_states)
        cpus_idle, cpus_total = _aiot(cpu_states)
        max_nodes = integer(size.partition("-")[2]) if "-" in size else integer(size)
        info = QueueInfo(
            name=name,
            default=default,
            available=avail == "up",
            state=avail,
            max_walltime=duration(limit),
            max_nodes=max_nodes,
            nodes_total=nodes_total if nodes_total is not None else integer(nodes),
            nodes_idle=nodes_idle,
            cpus_total=cpus_total,
            cpus_idle=cpus_idle,
            cpus_per_node=_count(cpus),
            memory_mb_per_node=_count(memory),
            scratch_mb_per_node=_count(tmp),
        )
        seen = merged.get(name)
        if seen is not None:
            info = QueueInfo(
                name=name,
                default=seen.default or default,
                available=seen.available or info.available,
                state=seen.state,
                max_walltime=seen.max_walltime,
                max_nodes=seen.max_nodes,
                nodes_total=_add(seen.nodes_total, info.nodes_total),
                nodes_idle=_add(seen.nodes_idle, info.nodes_idle),
                cpus_total=_add(seen.cpus_total, info.cpus_total),
                cpus_idle=_add(seen.cpus_idle, info.cpus_idle),
                cpus_per_node=_max(seen.cpus_per_node, info.cpus_per_node),
                memory_mb_per_node=_max(seen.memory_mb_per_node, info.memory_mb_per_node),
                scratch_mb_per_node=_max(seen.scratch_mb_per_node, info.scratch_mb_per_node),
            )
        merged[name] = info
    return list(merged.values())
