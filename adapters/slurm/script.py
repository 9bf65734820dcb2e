"""The Slurm batch script and the sbatch options that shape the job. Pure."""

from __future__ import annotations

from adapters.base import SubmitRequest
from adapters.batch import directives as script_directives
from adapters.batch.script import check_request, directive_lines, mpi_launch, render
from adapters.batch.types import DialectConfig, JobLayout
from adapters.slurm import arrays

DIRECTIVES = script_directives.SLURM
PREFIX = DIRECTIVES.prefix


def slurm_time(seconds: int) -> str:
    """sbatch --time as `D-HH:MM:SS` (Slurm rounds seconds up to whole minutes)."""
    minutes, secs = divmod(max(seconds, 1), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"


def job_options(request: SubmitRequest, layout: JobLayout, config: DialectConfig) -> list[str]:
    """The options the gateway decides. Given on the sbatch command line, where they
    override any `#SBATCH` line of a user script; `--opt=value` so no value reads as an option.
    """
    check_request(request)
    res = request.resources
    options = [
        f"--job-name={request.tag}",
        f"--comment={request.tag}",
        f"--chdir={layout.workdir}",
        *_outputs(request, layout),
        f"--time={slurm_time(res.walltime_seconds)}",
        f"--nodes={res.nodes}",
        f"--ntasks={res.ranks}",
    ]
    if res.ranks_per_node is not None:
        options.append(f"--ntasks-per-node={res.ranks_per_node}")
    options.append(f"--cpus-per-task={res.threads_per_rank}")
    if res.memory_mb is not None:
        options.append(f"--mem={res.memory_mb}M")
    if res.scratch_mb is not None:
        options.append(f"--tmp={res.scratch_mb}M")
    partition = request.partition or config.default_queue
    if partition:
        options.append(f"--partition={partition}")
    account = request.account or config.default_account
    if account:
        options.append(f"--account={account}")
    if request.qos:
        options.append(f"--qos={request.qos}")
    if request.array is not None:
        options.append(arrays.array_option(request.array))
    return options


def _outputs(request: SubmitRequest, layout: JobLayout) -> list[str]:
    """A task sends its own output to its directory (adapters.batch.arrays); Slurm's
    file per task (`%a`) keeps only what a task says before it gets there."""
    if request.array is None:
        return [f"--output={layout.stdout}", f"--error={layout.stderr}"]
    return [f"--output={layout.control_dir}/task-%a.out"]


def render_script(
    request: SubmitRequest, layout: JobLayout, config: DialectConfig, *, srun: str
) -> str:
    """The batch script: the same options as directives (a self-describing script), the
    user's mail directives, then environment, cd and the launch."""
    options = job_options(request, layout, config)
    launch, setup = mpi_launch(request, config, srun=srun)
    return render(
        request, layout, config,
        directives=directive_lines(PREFIX, [[option] for option in options]),
        user_rules=DIRECTIVES,
        launch=launch,
        launch_setup=setup,
        array_shape=arrays.SHAPE,
    )
