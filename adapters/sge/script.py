"""The Grid Engine batch script and the qsub options that shape the job. Pure."""

from __future__ import annotations

from adapters.base import SubmitRequest
from adapters.batch import directives as script_directives
from adapters.batch.script import (
    check_request,
    directive_lines,
    mpi_launch,
    ranks_per_node,
    render,
)
from adapters.batch.types import DialectConfig, JobLayout
from adapters.errors import SubmitRejected
from adapters.sge import arrays

DIRECTIVES = script_directives.SGE
PREFIX = DIRECTIVES.prefix
# qsub reads `host:path` and comma lists in -o/-e/-wd values.
PATH_SYNTAX = ":,"


def slots(request: SubmitRequest) -> int:
    """Grid Engine slots: one per core, ranks times threads."""
    return request.resources.ranks * request.resources.threads_per_rank


def job_options(
    request: SubmitRequest,
    layout: JobLayout,
    config: DialectConfig,
    *,
    parallel_environment: str | None,
    memory_resource: str | None,
    verify: str | None,
    scratch_resource: str | None = None,
) -> list[list[str]]:
    """qsub options the gateway decides, one option and its values per item. On the command
    line they override `#$` lines of a user script (sge_submit(1): the command line is
    processed last)."""
    check_request(request, path_forbidden=PATH_SYNTAX)
    res = request.resources
    options = [
        ["-N", request.tag],
        ["-wd", layout.workdir],
        *_outputs(request, layout),
        ["-j", "n"],
        ["-S", config.shell],
        # Seconds, not H:MM:SS: qacct's category field keeps it readable (accounting(5) is
        # colon separated).
        ["-l", f"h_rt={res.walltime_seconds}"],
    ]
    if verify:
        # "e": refuse at submission a job that could not run even in an empty cluster,
        # instead of letting it wait forever.
        options.append(["-w", verify])
    queue = request.partition or config.default_queue
    if queue:
        options.append(["-q", queue])
    account = request.account or config.default_account
    if account:
        options.append(["-A", account])
    total = slots(request)
    if total > 1 or res.nodes > 1:
        if not parallel_environment:
            raise SubmitRejected(
                f"this Grid Engine site has no parallel environment for a job of {total} "
                f"slots on {res.nodes} node(s)"
            )
        options.append(["-pe", parallel_environment, str(total)])
    # Consumables are per slot.
    per_node = ranks_per_node(res) * res.threads_per_rank
    for resource, mb in ((memory_resource, res.memory_mb), (scratch_resource, res.scratch_mb)):
        if mb is not None and resource:
            options.append(["-l", f"{resource}={-(-mb // per_node)}M"])
    if request.array is not None:
        options += arrays.array_options(request.array)
    return options


def _outputs(request: SubmitRequest, layout: JobLayout) -> list[list[str]]:
    """A task sends its own output to its directory (adapters.batch.arrays); given a
    directory, Grid Engine writes a file per task there (`NAME.oJOB.TASK`) for the rest."""
    if request.array is None:
        return [["-o", layout.stdout], ["-e", layout.stderr]]
    return [["-o", f"{layout.control_dir}/"], ["-e", f"{layout.control_dir}/"]]


def render_script(
    request: SubmitRequest,
    layout: JobLayout,
    config: DialectConfig,
    *,
    parallel_environment: str | None,
    memory_resource: str | None,
    verify: str | None,
    scratch_resource: str | None = None,
) -> str:
    options = job_options(
        request, layout, config, parallel_environment=parallel_environment,
        memory_resource=memory_resource, verify=verify, scratch_resource=scratch_resource,
    )
    launch, setup = mpi_launch(request, config)
    return render(
        request, layout, config,
        directives=directive_lines(PREFIX, options),
        user_rules=DIRECTIVES,
        launch=launch,
        launch_setup=setup,
        array_shape=arrays.SHAPE,
    )
