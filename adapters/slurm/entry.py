"""Slurm in the scheduler registry (adapters.registry)."""

from __future__ import annotations

from adapters.scheduler_entry import DialectSettings, SchedulerEntry
from adapters.slurm.commands import SlurmCommands
from adapters.slurm.dialect import SlurmDialect


def _build(settings: DialectSettings) -> SlurmDialect:
    return SlurmDialect(settings.config, SlurmCommands(**settings.commands))


ENTRY = SchedulerEntry(
    kind="slurm",
    title=SlurmDialect.title,
    commands=("sbatch", "squeue", "sacct", "scancel", "sinfo", "srun"),
    build=_build,
    # srun starts MPI ranks itself (`mpi.launcher: srun`).
    launchers=frozenset({"srun"}),
)
