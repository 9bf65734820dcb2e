"""Turn a stored job spec into the plain request an adapter understands."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from adapters.base import ArrayRequest, ContainerLaunch, MpiRequest, Resources, SubmitRequest
from gateway.domain.job_relations import array_of, task_environment
from gateway.domain.jobspec import JobSpec
from gateway.scheduling.feasibility import SiteShape, partition_for
from workflows.arrays import TASK_ID_ENV


def build_submit_request(spec: JobSpec, tag: str, workdir: str,
                         container: ContainerLaunch | None = None,
                         array_index: int | None = None,
                         site: SiteShape | None = None) -> SubmitRequest:
    """The adapter's request for the job. `container`: a container job's launch line,
    which holds its MPI launcher; `array_index`: a task of the job array the spec
    describes, which also gets its index and the array's shape in its environment;
    `site`: the shape of the site it goes to, whose partition that fits it gets it
    (feasibility.partition_for)."""
    res = spec.resources
    mpi = MpiRequest(launcher=spec.mpi.launcher.value, flavor=spec.mpi.flavor)
    argv = None if spec.executable is None else [spec.executable, *spec.args]
    env = dict(spec.environment)
    if spec.array is not None and array_index is not None:
        env.update(task_environment(spec.array, array_index))
    return SubmitRequest(
        tag=tag,
        workdir=workdir,
        argv=argv,
        script=spec.script,
        env=env,
        resources=Resources(
            nodes=res.nodes,
            ranks=res.ranks,
            ranks_per_node=res.ranks_per_node,
            threads_per_rank=res.threads_per_rank,
            memory_mb=res.memory_mb,
            walltime_seconds=res.walltime,
            scratch_mb=res.scratch_mb,
        ),
        mpi=MpiRequest() if container is not None else mpi,
        partition=spec.partition if site is None else partition_for(spec, site),
        qos=spec.qos,
        container=container,
    )


def build_array_request(spec: JobSpec, tag: str, workdir: str, indices: Sequence[int],
                        throttle: int | None, site: SiteShape | None = None) -> SubmitRequest:
    """The adapter's request for a native array of the spec's tasks `indices`: the
    array's shape in every task's environment, each task's own index set by the batch
    script itself (adapters.batch.arrays)."""
    request = build_submit_request(spec, tag, workdir, site=site)
    env = dict(request.env)
    if spec.array is not None:
        shape = array_of(spec.array)
        env.update({name: value for name, value in shape.environment(shape.indices[0]).items()
                    if name != TASK_ID_ENV})
    return replace(request, env=env, array=ArrayRequest(tuple(indices), throttle))
