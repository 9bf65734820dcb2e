"""What a site offers jobs: partitions and their limits, networks, MPI flavors."""

from __future__ import annotations

from enum import StrEnum
from typing import Self

from pydantic import Field, model_validator

from gateway.siteconfig.fields import (
    ArgvItem,
    FieldIssues,
    FlavorName,
    Loc,
    PartitionName,
    Section,
    SetupLine,
    Walltime,
)
from gateway.siteconfig.keys import SafeText
from rules.text import TextRule


class Partition(Section):
    """One partition (Slurm) or queue (Grid Engine, PBS, LSF) and its limits."""

    name: PartitionName
    default: bool = Field(default=False, description="The partition jobs go to when they "
                                                     "name none (exactly one).")
    max_nodes: int = Field(ge=1, description="Most nodes one job may use.")
    nodes: int | None = Field(default=None, ge=1,
                              description="How many nodes the partition has in all.")
    max_walltime: Walltime
    cores_per_node: int = Field(ge=1, description="Cores (CPUs) of one node.")
    memory_mb_per_node: int = Field(ge=1, description="Memory of one node usable by jobs, "
                                                      "in MiB.")
    scratch_mb_per_node: int | None = Field(
        default=None, ge=1, description="Node-local scratch disk of one node usable by jobs "
        "($TMPDIR; Slurm's TmpDisk), in MiB. Unset: jobs that ask for scratch go elsewhere.")

    @model_validator(mode="after")
    def _nodes_cover_max(self) -> Self:
        if self.nodes is not None and self.max_nodes > self.nodes:
            raise FieldIssues([(("max_nodes",), f"{self.max_nodes} is more than the partition's "
                                             f"{self.nodes} nodes: lower it or raise `nodes`")])
        return self


def one_default(partitions: list[Partition]) -> list[Partition]:
    names = [p.name for p in partitions]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"partition {dupes[0]!r} is listed twice: give each partition once")
    defaults = [p.name for p in partitions if p.default]
    if len(defaults) != 1:
        if not defaults:
            raise ValueError("no default partition: set `default: true` on exactly one "
                             "partition")
        raise ValueError(f"{len(defaults)} default partitions ({', '.join(defaults)}): keep "
                         "`default: true` on exactly one")
    return partitions


class Interconnect(Section):
    """A network between compute nodes and what MPI achieves over it."""

    name: SafeText = Field(min_length=1, max_length=100,
                           description="e.g. Myrinet, Fast Ethernet, InfiniBand HDR.")
    latency_us: float = Field(gt=0, description="Small-message one-way latency, microseconds.")
    bandwidth_mbs: float = Field(gt=0, description="Large-message bandwidth, MB/s.")
    note: SafeText | None = Field(default=None, description="How the figures were obtained.")


class MpiLauncherKind(StrEnum):
    MPIRUN = "mpirun"
    SRUN = "srun"
    MPIEXEC = "mpiexec"


SRUN_MPI_PLUGIN = TextRule("srun MPI plugin name", r"[a-z0-9_]{1,32}",
                           "see `srun --mpi=list`, e.g. pmi2")


class MpiFlavor(Section):
    """An MPI implementation jobs can ask for, and the launchers that start it.

    A job names the flavor (`mpi.flavor`) and a launcher (`mpi.launcher`): `mpirun` is the
    library's own launcher (`command` below; `mpiexec` counts as one), `srun` is Slurm's.
    """

    name: FlavorName
    launchers: list[MpiLauncherKind] = Field(
        min_length=1, description="How this flavor can be started: mpirun, mpiexec (the "
                                  "library's launcher) and/or srun (Slurm's).")
    command: list[ArgvItem] = Field(
        default_factory=list,
        description="The library's launcher as argv, e.g. [mpirun.openmpi]; `-n <ranks>` "
                    "and the program follow. Default: [mpirun] or [mpiexec].")
    ranks_per_node_args: list[ArgvItem] = Field(
        default_factory=list,
        description="Arguments of the library's launcher that place {n} ranks per node, e.g. "
                    "[-ppn, '{n}'] (MPICH) or [--map-by, 'ppr:{n}:node'] (Open MPI).")
    srun_mpi: str | None = Field(
        default=None, description="With srun: the `srun --mpi=` plugin, e.g. pmi2 (MPICH) "
                                  "or pmix (Open MPI).",
        json_schema_extra={"pattern": SRUN_MPI_PLUGIN.json_pattern})
    setup: list[SetupLine] = Field(
        default_factory=list,
        description="Shell lines run before launching (e.g. `module load mpich`). TRUSTED "
                    "admin input, copied verbatim into job scripts.")

    @model_validator(mode="after")
    def _fits_launchers(self) -> Self:
        issues: list[tuple[Loc, str]] = []
        launchers = self.launchers
        dupes = sorted({x.value for x in launchers if launchers.count(x) > 1})
        if dupes:
            issues.append((("launchers",), f"{dupes[0]} is listed twice: keep one"))
        own = self.library_launcher
        if own is None and self.command:
            issues.append((("command",), "only used with launcher mpirun or mpiexec: remove "
                                         "it or add one of them to `launchers`"))
        if own is None and self.ranks_per_node_args:
            issues.append((("ranks_per_node_args",), "only used with launcher mpirun or "
                                                     "mpiexec: remove it"))
        if self.ranks_per_node_args and not any("{n}" in a for a in self.ranks_per_node_args):
            issues.append((("ranks_per_node_args",), "write {n} where the number of ranks per "
                                                     "node goes, e.g. [-ppn, '{n}']"))
        if self.srun_mpi is not None:
            if MpiLauncherKind.SRUN not in launchers:
                issues.append((("srun_mpi",), "only used with launcher srun: remove it or add "
                                              "srun to `launchers`"))
            if not SRUN_MPI_PLUGIN.matches(self.srun_mpi):
                issues.append((("srun_mpi",), f"{self.srun_mpi!r} is not an srun MPI plugin "
                                              "name (see `srun --mpi=list`), e.g. pmi2"))
        if issues:
            raise FieldIssues(issues)
        return self

    @property
    def library_launcher(self) -> MpiLauncherKind | None:
        """mpirun or mpiexec, whichever this flavor lists first; None if only srun."""
        return next((x for x in self.launchers if x != MpiLauncherKind.SRUN), None)

    @property
    def argv(self) -> list[str]:
        """The library's launcher as argv (before `-n <ranks>` and the program)."""
        own = self.library_launcher
        return list(self.command) or ([own.value] if own is not None else [])
