"""The PBS batch script and the qsub options that shape the job. Pure."""

from __future__ import annotations

from adapters.base import SubmitRequest
from adapters.batch import directives as script_directives
from adapters.batch.script import (
    check_request,
    directive_lines,
    hms,
    mpi_launch,
    ranks_per_node,
    render,
)
from adapters.batch.types import DialectConfig, JobLayout
from adapters.errors import SubmitRejected
from adapters.pbs import arrays
from adapters.pbs.torque import resources as torque_resources

DIRECTIVES = script_directives.PBS
PREFIX = DIRECTIVES.prefix
# qsub reads `host:path` in -o/-e values and comma lists in -l values.
PATH_SYNTAX = ":,"


def select(request: SubmitRequest, scratch_resource: str | None = None) -> str:
    """One chunk per node: its CPUs, MPI ranks, threads and memory (pbs_resources(7B)),
    and its node-local scratch as the host-level resource the site names for it."""
    res = request.resources
    per_node = ranks_per_node(res)
    chunk = (f"{res.nodes}:ncpus={per_node * res.threads_per_rank}:mpiprocs={per_node}"
             f":ompthreads={res.threads_per_rank}")
    if res.memory_mb is not None:
        chunk += f":mem={res.memory_mb}mb"
    if res.scratch_mb is not None and scratch_resource:
        chunk += f":{scratch_resource}={res.scratch_mb}mb"
    return chunk


def job_options(
    request: SubmitRequest, layout: JobLayout, config: DialectConfig, *, keep_files: str | None,
    torque: bool = False, scratch_resource: str | None = None,
) -> list[list[str]]:
    """qsub options the gateway decides, one option and its value per item; on the command
    line they override `#PBS` lines of a user script. PBS has no working-directory option:
    the script's `cd` puts the job there. `torque`: TORQUE's resource syntax."""
    check_request(request, path_forbidden=PATH_SYNTAX)
    res = request.resources
    options = [
        ["-N", request.tag],
        *_outputs(request, layout),
        ["-j", "n"],
        ["-S", config.shell],
        ["-l", f"walltime={hms(res.walltime_seconds)}"],
    ]
    if torque:
        options += torque_resources(request)
    else:
        options.append(["-l", f"select={select(request, scratch_resource)}"])
        if res.nodes > 1:
            options.append(["-l", "place=scatter"])
    if keep_files:
        # "d": write output straight to its destination, so it can be read while running.
        options.append(["-k", keep_files])
    queue = request.partition or config.default_queue
    if queue:
        options.append(["-q", queue])
    account = request.account or config.default_account
    if account:
        options.append(["-A", account])
    if request.array is not None:
        if torque:
            raise SubmitRejected("TORQUE job arrays are not used: submit task by task")
        options += arrays.array_options(request.array)
    return options


def _outputs(request: SubmitRequest, layout: JobLayout) -> list[list[str]]:
    """A subjob sends its own output to its directory (adapters.batch.arrays); given
    a directory, PBS writes a file per subjob there (`<subjob id>.OU`) for the rest."""
    if request.array is None:
        return [["-o", layout.stdout], ["-e", layout.stderr]]
    return [["-o", f"{layout.control_dir}/"], ["-e", f"{layout.control_dir}/"]]


def render_script(
    request: SubmitRequest, layout: JobLayout, config: DialectConfig, *, keep_files: str | None,
    torque: bool = False, scratch_resource: str | None = None,
) -> str:
    options = job_options(request, layout, config, keep_files=keep_files, torque=torque,
                          scratch_resource=scratch_resource)
    launch, setup = mpi_launch(request, config)
    return render(
        request, layout, config,
        directives=directive_lines(PREFIX, options),
        user_rules=DIRECTIVES,
        launch=launch,
        launch_setup=setup,
        array_shape=None if torque else arrays.SHAPE,
    )
