"""sbatch: submit with the script on stdin, and `--test-only` start-time estimates. Pure."""

from __future__ import annotations

import re

from adapters.base import SubmitRequest
from adapters.batch.text import lines, submit_failed, text, timestamp
from adapters.batch.types import DialectConfig, JobLayout, StartEstimate, SubmitCommand
from adapters.errors import SiteUnavailable
from adapters.slurm.commands import SlurmCommands
from adapters.slurm.script import job_options, render_script
from adapters.transport import CommandResult

# sbatch --parsable prints "<job id>" or "<job id>;<cluster>".
_PARSABLE = re.compile(r"(\d+)(?:;\S+)?")
# sbatch --test-only, on stderr (TESTBED-NOTES; time per SLURM_TIME_FORMAT): "sbatch: Job 3
# to start at 2026-11-22T02:15:35 using 2 processors on nodes sitea in partition debug"
_ESTIMATE = re.compile(
    r"Job (?P<id>\d+) to start at (?P<start>\S+) using (?P<cpus>\d+) processors? "
    r"on nodes (?P<nodes>\S+) in partition (?P<partition>\S+)"
)
# Messages meaning the controller could not be reached: the job was probably not taken.
TRANSIENT = (
    "Unable to contact slurm controller",
    "Socket timed out",
    "Zero Bytes were transmitted or received",
    "Connection refused",
    "Communication connection failure",
    "temporarily unable to accept job",
    "slurm_persist_conn",
    "Transport endpoint is not connected",
)


def submit_command(
    commands: SlurmCommands, request: SubmitRequest, layout: JobLayout, config: DialectConfig
) -> SubmitCommand:
    """`sbatch --parsable <options>` with the rendered script on stdin. Site extras come
    first so the gateway's own options, given later, win."""
    script = render_script(request, layout, config, srun=commands.srun)
    argv = (commands.sbatch, "--parsable", *config.extra_submit_args,
            *job_options(request, layout, config))
    return SubmitCommand(argv, script.encode())


def parse_submit(result: CommandResult) -> str:
    """The job id sbatch printed."""
    if result.exit_status != 0:
        raise submit_failed(result, TRANSIENT)
    for line in lines(result.stdout):
        match = _PARSABLE.fullmatch(line)
        if match:
            return match.group(1)
    # It said yes but not to what: the job may exist; recovery looks for it by its tag.
    raise SiteUnavailable(f"sbatch printed no job id: {text(result.stdout)!r}")


def estimate_command(
    commands: SlurmCommands, request: SubmitRequest, layout: JobLayout, config: DialectConfig
) -> SubmitCommand:
    """`sbatch --test-only`: the same job, not submitted (it does consume a job id)."""
    submit = submit_command(commands, request, layout, config)
    argv = commands.with_epoch_times(commands.sbatch, "--test-only", *submit.argv[2:])
    return SubmitCommand(argv, submit.stdin)


def parse_estimate(result: CommandResult, config: DialectConfig) -> StartEstimate | None:
    """The predicted start; SubmitRejected if the job would be refused."""
    if result.exit_status != 0:
        raise submit_failed(result, TRANSIENT)
    for line in lines(result.stderr) + lines(result.stdout):
        match = _ESTIMATE.search(line)
        if match:
            start = timestamp(match["start"], config.timezone)
            if start is None:
                return None
            return StartEstimate(
                start=start,
                queue=match["partition"],
                nodes=(match["nodes"],),
                processors=int(match["cpus"]),
                raw=line,
            )
    return None
