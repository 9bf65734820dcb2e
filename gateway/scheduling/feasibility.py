"""Can a site ever run this job? Pure: a spec and a site's shape in, a reason out."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.domain.jobspec import JobSpec, MpiLauncher, Resources


@dataclass(frozen=True)
class PartitionShape:
    """The largest job one partition (queue) of a site takes."""

    name: str
    max_nodes: int
    cores_per_node: int
    memory_mb_per_node: int | None
    max_walltime: int
    # Node-local scratch a job may use; None: the partition offers none (unlike memory,
    # where None means unknown).
    scratch_mb_per_node: int | None = None

    def fits(self, res: Resources) -> bool:
        """Whether one job of these resources fits this partition."""
        return (res.nodes <= self.max_nodes
                and res.max_ranks_per_node * res.threads_per_rank <= self.cores_per_node
                and res.walltime <= self.max_walltime
                and (self.memory_mb_per_node is None
                     or (res.memory_mb or 0) <= self.memory_mb_per_node)
                and scratch_fits(res, self.scratch_mb_per_node))


def scratch_fits(res: Resources, offered: int | None) -> bool:
    """Whether a node's scratch (`offered`; None: none) covers what the job asks for."""
    return res.scratch_mb is None or (offered is not None and res.scratch_mb <= offered)


@dataclass(frozen=True)
class SiteShape:
    """The largest job a site can run, from its configuration; `partitions` each one's,
    the default first."""

    name: str
    max_nodes: int
    cores_per_node: int
    memory_mb_per_node: int | None
    max_walltime: int
    mpi_launchers: frozenset[str]
    mpi_flavors: frozenset[str]
    partitions: tuple[PartitionShape, ...] = ()
    scratch_mb_per_node: int | None = None
    # Qualities of service jobs may name here.
    qos: frozenset[str] = frozenset()


def partition_for(spec: JobSpec, site: SiteShape) -> str | None:
    """The partition a job goes to at `site`: the one it names; else the default when the
    job fits it, or the first other that it fits (a job of 1 h on a site whose default
    partition stops at 30 min goes to one that runs it); None for the scheduler's default."""
    if spec.partition is not None:
        return spec.partition
    fitting = [p for p in site.partitions if p.fits(spec.resources)]
    if not fitting or fitting[0] == site.partitions[0]:
        return None
    return fitting[0].name


def unfit_reason(spec: JobSpec, site: SiteShape) -> str | None:
    """Why `site` can never run `spec`, or None when it can."""
    res = spec.resources
    if res.nodes > site.max_nodes:
        return f"needs {res.nodes} nodes; site '{site.name}' has at most {site.max_nodes}"
    cores = res.max_ranks_per_node * res.threads_per_rank
    if cores > site.cores_per_node:
        return (
            f"needs {cores} cores on one node ({res.max_ranks_per_node} ranks x "
            f"{res.threads_per_rank} threads); site '{site.name}' has "
            f"{site.cores_per_node} per node"
        )
    if res.ranks > res.nodes * site.cores_per_node // res.threads_per_rank:
        return (
            f"{res.ranks} ranks x {res.threads_per_rank} threads do not fit on {res.nodes} "
            f"node(s) of {site.cores_per_node} cores at site '{site.name}'"
        )
    if site.memory_mb_per_node is not None and (res.memory_mb or 0) > site.memory_mb_per_node:
        return (
            f"needs {res.memory_mb} MiB per node; site '{site.name}' has "
            f"{site.memory_mb_per_node} MiB"
        )
    if not scratch_fits(res, site.scratch_mb_per_node):
        if site.scratch_mb_per_node is None:
            return (f"needs {res.scratch_mb} MiB of node-local scratch; site '{site.name}' "
                    "declares none")
        return (f"needs {res.scratch_mb} MiB of node-local scratch per node; site "
                f"'{site.name}' has {site.scratch_mb_per_node} MiB")
    if res.walltime > site.max_walltime:
        return (
            f"walltime {res.walltime} s exceeds site '{site.name}' limit of "
            f"{site.max_walltime} s"
        )
    if spec.qos is not None and spec.qos not in site.qos:
        offered = ", ".join(sorted(site.qos)) or "none"
        return f"QOS '{spec.qos}' is not offered at site '{site.name}' (offers: {offered})"
    launcher = spec.mpi.launcher
    if launcher != MpiLauncher.NONE and launcher.value not in site.mpi_launchers:
        return f"MPI launcher '{launcher.value}' is not available at site '{site.name}'"
    # In a container job the flavor names the image's MPI, which any site MPI of its ABI
    # family can serve: the container constraint decides (gateway.scheduling.constraints).
    if (spec.mpi.flavor is not None and spec.container is None
            and spec.mpi.flavor not in site.mpi_flavors):
        have = ", ".join(sorted(site.mpi_flavors)) or "none"
        return (f"MPI flavor '{spec.mpi.flavor}' is not available at site '{site.name}' "
                f"(has: {have})")
    return None
