"""The LSF batch script and the bsub options that shape the job. Pure."""

from __future__ import annotations

from adapters.base import SubmitRequest
from adapters.batch import directives as script_directives
from adapters.batch.script import (
    ceil_minutes,
    check_request,
    directive_lines,
    mpi_launch,
    ranks_per_node,
    render,
)
from adapters.batch.types import DialectConfig, JobLayout
from adapters.lsf import arrays

DIRECTIVES = script_directives.LSF
PREFIX = DIRECTIVES.prefix


def job_options(
    request: SubmitRequest, layout: JobLayout, config: DialectConfig, *, memory: bool
) -> list[list[str]]:
    """bsub options the gateway decides; on the command line they override `#BSUB` lines.

    `-n` counts slots (ranks x threads), `span[ptile=]` puts a node's share on each node,
    `-W` is in minutes. `memory`: send `rusage[mem=]` per slot, in the unit the site's
    LSF_UNIT_FOR_LIMITS sets (MB assumed); node scratch is `rusage[tmp=]` per slot.
    """
    check_request(request)
    res = request.resources
    slots = res.ranks * res.threads_per_rank
    per_node = ranks_per_node(res) * res.threads_per_rank
    options = [
        ["-J", request.tag if request.array is None
         else arrays.array_name(request.tag, request.array)],
        ["-cwd", layout.workdir],
        *_outputs(request, layout),
        ["-W", str(ceil_minutes(res.walltime_seconds))],
        ["-n", str(slots)],
    ]
    if res.nodes > 1 or res.ranks_per_node is not None:
        options.append(["-R", f"span[ptile={per_node}]"])
    # One rusage section, per slot: memory in LSF_UNIT_FOR_LIMITS, tmp (the built-in load
    # index of /tmp's free space) in MB.
    usage = []
    if memory and res.memory_mb is not None:
        usage.append(f"mem={-(-res.memory_mb // per_node)}")
    if res.scratch_mb is not None:
        usage.append(f"tmp={-(-res.scratch_mb // per_node)}")
    if usage:
        options.append(["-R", f"rusage[{':'.join(usage)}]"])
    queue = request.partition or config.default_queue
    if queue:
        options.append(["-q", queue])
    account = request.account or config.default_account
    if account:
        options.append(["-P", account])
    return options


def _outputs(request: SubmitRequest, layout: JobLayout) -> list[list[str]]:
    """An element sends its own output to its directory (adapters.batch.arrays);
    LSF's file per element (`%I`) keeps only what it says before it gets there."""
    if request.array is None:
        return [["-o", layout.stdout], ["-e", layout.stderr]]
    return [["-o", f"{layout.control_dir}/task-%I.out"],
            ["-e", f"{layout.control_dir}/task-%I.err"]]


def render_script(
    request: SubmitRequest, layout: JobLayout, config: DialectConfig, *, memory: bool
) -> str:
    options = job_options(request, layout, config, memory=memory)
    launch, setup = mpi_launch(request, config)
    return render(
        request, layout, config,
        directives=directive_lines(PREFIX, options),
        user_rules=DIRECTIVES,
        launch=launch,
        launch_setup=setup,
        array_shape=arrays.SHAPE,
    )
