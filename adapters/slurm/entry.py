"""Slurm in the scheduler registry (adapters.registry)."""

from __future__ import annotations

from adapters.batch.entry import DialectOption, DialectSettings, SchedulerEntry
from adapters.slurm.arrays import DEFAULT_MAX_ARRAY_SIZE
from adapters.slurm.commands import SlurmCommands
from adapters.slurm.dialect import SlurmDialect
from rules.text import TextRule

MAX_ARRAY_SIZE = DialectOption(
    "max_array_size", "array size limits",
    "The cluster's MaxArraySize (`scontrol show config`), as text: a job array whose "
    f"highest index reaches it goes task by task; default {DEFAULT_MAX_ARRAY_SIZE}, "
    "Slurm's own default.",
    TextRule("MaxArraySize", r"[1-9][0-9]{0,8}", 'write a number in quotes, e.g. "10001"'))


def _build(settings: DialectSettings) -> SlurmDialect:
    size = settings.text(MAX_ARRAY_SIZE.name)
    return SlurmDialect(settings.config, SlurmCommands(**settings.commands),
                        max_array_size=int(size) if size else DEFAULT_MAX_ARRAY_SIZE)


ENTRY = SchedulerEntry(
    kind="slurm",
    title=SlurmDialect.title,
    commands=("sbatch", "squeue", "sacct", "scancel", "sinfo", "srun", "sacctmgr"),
    build=_build,
    options=(MAX_ARRAY_SIZE,),
    # srun starts MPI ranks itself (`mpi.launcher: srun`).
    launchers=frozenset({"srun"}),
    qos=True,
)
