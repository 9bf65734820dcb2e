"""A site config's shape: the largest job it can ever run, for the feasibility check."""

from __future__ import annotations

from gateway.scheduling.feasibility import PartitionShape, SiteShape
from gateway.siteconfig.cluster import MpiLauncherKind
from gateway.siteconfig.model import SiteConfig

# What an UNLIMITED partition walltime counts as: longer than any job will ask for.
UNLIMITED_WALLTIME_SECONDS = 10 * 365 * 24 * 3600


def site_shape(config: SiteConfig) -> SiteShape:
    """Maxima over all partitions (nodes, cores, memory, scratch, walltime), launchers and
    flavors.

    Each maximum may come from a different partition: this answers "can this site ever
    run the job", and the scheduler (or a later per-partition check) has the last word.
    `mpiexec` is the MPI standard's name for a library's own launcher, which jobs ask for
    as `mpirun`, so a site with either offers `mpirun`.
    """
    parts = config.partitions
    walltimes = [UNLIMITED_WALLTIME_SECONDS if p.max_walltime is None else p.max_walltime
                 for p in parts]
    launchers = {launcher.value for flavor in config.mpi_flavors for launcher in flavor.launchers}
    if MpiLauncherKind.MPIEXEC.value in launchers:
        launchers.add(MpiLauncherKind.MPIRUN.value)
    return SiteShape(
        name=config.name,
        max_nodes=max(p.max_nodes for p in parts),
        cores_per_node=max(p.cores_per_node for p in parts),
        memory_mb_per_node=max(p.memory_mb_per_node for p in parts),
        max_walltime=max(walltimes),
        mpi_launchers=frozenset(launchers),
        mpi_flavors=frozenset(flavor.name for flavor in config.mpi_flavors),
        # The default first: a job that fits it goes there (partition_for).
        partitions=tuple(sorted(
            (PartitionShape(p.name, p.max_nodes, p.cores_per_node, p.memory_mb_per_node,
                            walltime, p.scratch_mb_per_node)
             for p, walltime in zip(parts, walltimes, strict=True)),
            key=lambda shape: shape.name != config.default_partition.name)),
        scratch_mb_per_node=max((p.scratch_mb_per_node for p in parts
                                 if p.scratch_mb_per_node is not None), default=None),
        qos=frozenset(config.scheduler.qos),
    )
