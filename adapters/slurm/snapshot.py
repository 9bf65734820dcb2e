"""squeue --all and sinfo --Node: the whole queue and the cores, for a queue snapshot. Pure.

Jobs: `squeue --all --array --noheader --format=%i|%T|%P|%C|%D|%l|%V|%S|%u|%r|%j`
(squeue(1) "-o" field specifications: id, extended state, partition, CPUs requested or
allocated, nodes, time limit, submit time, start time, user, reason, name; the name last so
a `|` in it cannot shift the other fields), every user's jobs in every partition, each array
task on its own line. For a pending job `%S` is the start the backfill scheduler expects
(what `squeue --start` shows; `N/A` until it has planned the job). With SLURM_TIME_FORMAT=%s
every time is epoch seconds.

Cores: `sinfo --Node --noheader --format=%N|%P|%a|%l|%s|%C|%c|%m|%T`: one line per node and
partition, CPUs as allocated/idle/other/total. A node in several partitions counts once for
the site and once in each partition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import tzinfo

from adapters.batch.text import duration, integer, lines, query_failed, timestamp
from adapters.batch.types import job_phase
from adapters.errors import SiteUnavailable
from adapters.slurm.commands import SlurmCommands
from adapters.slurm.states import native_state
from adapters.slurm.status import JOB_ID
from adapters.snapshot import JobPhase, QueueInfo, SiteCores, SnapshotJob
from adapters.transport import CommandResult

JOBS_FORMAT = "%i|%T|%P|%C|%D|%l|%V|%S|%u|%r|%j"
_JOB_FIELDS = JOBS_FORMAT.count("|") + 1
NODES_FORMAT = "%N|%P|%a|%l|%s|%C|%c|%m|%T"
_NODE_FIELDS = NODES_FORMAT.count("|") + 1


def queue_jobs_command(commands: SlurmCommands) -> tuple[str, ...]:
    return commands.with_epoch_times(
        commands.squeue, "--all", "--array", "--noheader", f"--format={JOBS_FORMAT}")


def _unreadable(what: str, line: str) -> SiteUnavailable:
    return SiteUnavailable(f"{what} printed a line not of the asked format: {line[:200]!r}")


def parse_queue_jobs(result: CommandResult, tz: tzinfo) -> list[SnapshotJob]:
    """Pending and running jobs; jobs in a final or unknown state are left out."""
    if result.exit_status != 0:
        raise query_failed(result)
    jobs = []
    for line in lines(result.stdout):
        fields = line.split("|", _JOB_FIELDS - 1)
        if len(fields) != _JOB_FIELDS or not JOB_ID.matches(fields[0]):
            raise _unreadable("squeue", line)
        native_id, raw, partition, cpus, nodes, limit, submit, start, user, _reason, name = fields
        phase = job_phase(native_state(raw)[0])
        if phase is None:
            continue
        begins = timestamp(start, tz)
        jobs.append(SnapshotJob(
            native_id=native_id,
            phase=phase,
            raw_state=raw,
            cores=integer(cpus),
            nodes=integer(nodes),
            time_limit_seconds=duration(limit),
            submitted_at=timestamp(submit, tz),
            started_at=begins if phase is JobPhase.RUNNING else None,
            estimated_start=begins if phase is JobPhase.PENDING else None,
            queue=partition or None,
            user=user or None,
            name=name,
        ))
    return jobs


def cores_command(commands: SlurmCommands) -> tuple[str, ...]:
    return (commands.sinfo, "--Node", "--noheader", f"--format={NODES_FORMAT}")


@dataclass
class _Partition:
    name: str
    default: bool = False
    available: bool = False
    limit: str = ""
    size: str = ""
    nodes: int = 0
    nodes_idle: int = 0
    cpus: int = 0
    cpus_idle: int = 0
    cpus_per_node: list[int] = field(default_factory=list)
    memory: list[int] = field(default_factory=list)

    def info(self) -> QueueInfo:
        max_nodes = self.size.partition("-")[2] if "-" in self.size else self.size
        return QueueInfo(
            name=self.name, default=self.default, available=self.available,
            state="up" if self.available else "not up",
            max_walltime=duration(self.limit), max_nodes=integer(max_nodes),
            nodes_total=self.nodes, nodes_idle=self.nodes_idle,
            cpus_total=self.cpus, cpus_idle=self.cpus_idle,
            cpus_per_node=max(self.cpus_per_node, default=None),
            memory_mb_per_node=max(self.memory, default=None),
        )


def _cpu_states(value: str) -> tuple[int, int] | None:
    """Idle and total of `allocated/idle/other/total` (other: down, drained, ...)."""
    parts = [integer(p) for p in value.split("/")]
    if len(parts) != 4 or any(p is None for p in parts):
        return None
    return parts[1] or 0, parts[3] or 0


def parse_cores(result: CommandResult) -> SiteCores:
    """The site's CPUs (each node once), idle ones as free, and each partition's."""
    if result.exit_status != 0:
        raise query_failed(result)
    partitions: dict[str, _Partition] = {}
    nodes: dict[str, tuple[int, int]] = {}
    for line in lines(result.stdout):
        fields = line.split("|")
        cpus = _cpu_states(fields[5]) if len(fields) == _NODE_FIELDS else None
        if cpus is None or not fields[0] or not fields[1]:
            raise _unreadable("sinfo", line)
        node, name, avail, limit, size, _, per_node, memory, state = fields
        idle, total = cpus
        nodes[node] = (idle, total)
        part = partitions.setdefault(name.rstrip("*"), _Partition(name.rstrip("*")))
        part.default = part.default or name.endswith("*")
        part.available = avail == "up"
        part.limit, part.size = limit, size
        part.nodes += 1
        part.nodes_idle += state.rstrip("*~#!%$@^-") == "idle"
        part.cpus += total
        part.cpus_idle += idle
        part.cpus_per_node += [n for n in [integer(per_node)] if n is not None]
        part.memory += [m for m in [integer(memory.rstrip("+"))] if m is not None]
    if not nodes:
        return SiteCores(None, None, ())
    return SiteCores(
        total=sum(total for _, total in nodes.values()),
        free=sum(idle for idle, _ in nodes.values()),
        queues=tuple(p.info() for p in partitions.values()),
    )
