"""Grid Engine in the scheduler registry (adapters.registry)."""

from __future__ import annotations

from adapters.batch.entry import (
    SCRATCH_RESOURCE,
    DialectOption,
    DialectSettings,
    SchedulerEntry,
)
from adapters.sge.commands import SgeCommands
from adapters.sge.dialect import SgeDialect
from rules.text import PARTITION, TextRule

PE_NAME = TextRule("parallel environment name", PARTITION.pattern,
                   "use letters, digits, '.', '_' or '-' (e.g. mpi)")
RESOURCE_NAME = TextRule("Grid Engine resource name", r"[A-Za-z_][A-Za-z0-9_]{0,63}",
                         "use a complex's name, e.g. h_vmem or mem_free")

OPTIONS = (
    DialectOption(
        "parallel_environment", "parallel environments",
        "The parallel environment for MPI jobs (`qsub -pe NAME SLOTS`; see `qconf -spl`).",
        PE_NAME, mpi_hint="name the parallel environment (see `qconf -spl`), e.g. mpi"),
    DialectOption(
        "memory_resource", "memory resources",
        "The per-slot consumable that carries a job's memory request (`-l NAME=...`), "
        "e.g. h_vmem; default: none is sent.", RESOURCE_NAME),
    SCRATCH_RESOURCE,
)


def _build(settings: DialectSettings) -> SgeDialect:
    return SgeDialect(settings.config, SgeCommands(**settings.commands),
                      parallel_environment=settings.text("parallel_environment"),
                      memory_resource=settings.text("memory_resource"),
                      scratch_resource=settings.text("scratch_resource"))


ENTRY = SchedulerEntry(
    kind="sge",
    title=SgeDialect.title,
    commands=("qsub", "qstat", "qacct", "qdel"),
    build=_build,
    options=OPTIONS,
)
