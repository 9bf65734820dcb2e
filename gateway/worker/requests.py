"""Turn a stored job spec into the plain request an adapter understands."""

from __future__ import annotations

from adapters.base import ContainerLaunch, MpiRequest, Resources, SubmitRequest
from gateway.domain.jobspec import JobSpec


def build_submit_request(spec: JobSpec, tag: str, workdir: str,
                         container: ContainerLaunch | None = None) -> SubmitRequest:
    """`container`: a container job's launch line, which holds its MPI launcher."""
    res = spec.resources
    mpi = MpiRequest(launcher=spec.mpi.launcher.value, flavor=spec.mpi.flavor)
    argv = None if spec.executable is None else [spec.executable, *spec.args]
    return SubmitRequest(
        tag=tag,
        workdir=workdir,
        argv=argv,
        script=spec.script,
        env=dict(spec.environment),
        resources=Resources(
            nodes=res.nodes,
            ranks=res.ranks,
            ranks_per_node=res.ranks_per_node,
            threads_per_rank=res.threads_per_rank,
            memory_mb=res.memory_mb,
            walltime_seconds=res.walltime,
        ),
        mpi=MpiRequest() if container is not None else mpi,
        partition=spec.partition,
        container=container,
    )
