"""`SlurmDialect`: the Slurm commands as a `SchedulerDialect` (see adapters.batch.types)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from adapters.base import ArrayRequest, Capabilities, JobStatus, SubmitRequest
from adapters.batch.dialect import BaseDialect, CancelAnswers
from adapters.batch.text import choose_job, lines, query_failed
from adapters.batch.types import (
    DialectConfig,
    JobLayout,
    QueueInfo,
    StartEstimate,
    SubmitCommand,
)
from adapters.slurm import accounting, arrays, qos, queues, snapshot, status, submit, usage
from adapters.slurm.commands import SlurmCommands
from adapters.slurm.script import render_script
from adapters.slurm.states import native_state
from adapters.snapshot import SiteCores, SnapshotJob
from adapters.transport import CommandResult
from adapters.usage import UsageRecord

if TYPE_CHECKING:
    from adapters.batch.types import SchedulerDialect


class SlurmDialect(BaseDialect):
    """Slurm through sbatch, squeue, sacct, scancel and sinfo.

    `tag_lookback_days`: how far back sacct searches for a job by its tag (crash recovery
    looks for jobs submitted minutes ago; a few days is plenty). `max_array_size`: the
    cluster's MaxArraySize (native arrays' indices stay below it).
    """

    kind = "slurm"
    title = "Slurm"
    # squeue's final states carry no exit code: sacct decides how a job ended.
    status_reports_final = False
    job_id = status.JOB_ID
    # Cancelling a job that is ending or over is not an error; older releases say "Invalid
    # job id specified" for an id they do not know (22.05 prints nothing, exit 0).
    cancel_answers = CancelAnswers(
        over=("already completing or completed", "Job/step already completing"),
        unknown=("Invalid job id specified",))

    def __init__(
        self,
        config: DialectConfig = DialectConfig(),
        commands: SlurmCommands = SlurmCommands(),
        *,
        tag_lookback_days: int = 7,
        max_array_size: int = arrays.DEFAULT_MAX_ARRAY_SIZE,
    ) -> None:
        super().__init__(config)
        self.commands = commands
        self.tag_lookback_days = tag_lookback_days
        self.max_array_size = max_array_size

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(queue_snapshot=True, start_estimate=True, accounting=True,
                            usage=True, whole_queue=True, queue_start_estimates=True,
                            arrays=True)

    def render_script(self, request: SubmitRequest, layout: JobLayout) -> str:
        return render_script(request, layout, self.config, srun=self.commands.srun)

    def submit_command(self, request: SubmitRequest, layout: JobLayout) -> SubmitCommand:
        # sbatch takes its options as single `--name=value` words (adapters.slurm.submit).
        return submit.submit_command(self.commands, request, layout, self.config)

    def parse_submit(self, result: CommandResult) -> str:
        return submit.parse_submit(result)

    def status_command(self, native_ids: Sequence[str]) -> tuple[str, ...]:
        return status.status_command(self.commands, native_ids)

    def parse_status(
        self, result: CommandResult, native_ids: Sequence[str]
    ) -> dict[str, JobStatus]:
        return status.parse_status(result, native_ids, self.config.timezone)

    def accounting_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        ids = status.valid_ids(native_ids)
        return [accounting.accounting_command(self.commands, ids)] if ids else []

    def parse_accounting(self, result: CommandResult) -> dict[str, JobStatus]:
        return accounting.parse_accounting(result, self.config.timezone)

    def usage_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        return usage.usage_commands(self.commands, native_ids)

    def parse_usage(self, result: CommandResult) -> list[UsageRecord]:
        return usage.parse_usage(result, self.config.timezone)

    def cancel_words(self) -> tuple[str, ...]:
        return (self.commands.scancel,)

    def find_commands(self, tag: str) -> list[tuple[str, ...]]:
        return [
            status.find_command(self.commands, tag),
            accounting.find_command(self.commands, tag, self.tag_lookback_days),
        ]

    def parse_find(self, result: CommandResult, tag: str) -> str | None:
        """Both lookups print the id first, the state second and the name last."""
        if result.exit_status != 0:
            raise query_failed(result)
        found = []
        for line in lines(result.stdout):
            fields = line.split("|")
            if len(fields) >= 3 and fields[-1] == tag and status.JOB_ID.matches(fields[0]):
                state, _ = native_state(fields[1])
                found.append((fields[0], state.is_final))
        return choose_job(found)

    array_shape = arrays.SHAPE

    def array_fits(self, array: ArrayRequest) -> bool:
        """Any indices (Slurm takes lists of ranges) below the cluster's MaxArraySize."""
        return (bool(array.indices) and min(array.indices) >= 0
                and max(array.indices) < self.max_array_size)

    def task_id(self, native_id: str, index: int) -> str:
        return arrays.task_id(native_id, index)

    def parse_find_array(self, result: CommandResult, tag: str) -> str | None:
        """Both lookups list an array's tasks (`123_3`, folded `123_[4-19%4]`) by name."""
        if result.exit_status != 0:
            raise query_failed(result)
        found = []
        for line in lines(result.stdout):
            fields = line.split("|")
            if len(fields) >= 3 and fields[-1] == tag:
                job = arrays.base_id(fields[0])
                if status.JOB_ID.matches(job):
                    found.append((job, False))
        return choose_job(found)

    def queues_command(self) -> tuple[str, ...]:
        return queues.queues_command(self.commands)

    def parse_queues(self, result: CommandResult) -> list[QueueInfo]:
        return queues.parse_queues(result)

    def qos_command(self) -> tuple[str, ...]:
        return qos.qos_command(self.commands)

    def parse_qos(self, result: CommandResult) -> list[str]:
        return qos.parse_qos(result)

    def queue_jobs_command(self) -> tuple[str, ...]:
        return snapshot.queue_jobs_command(self.commands)

    def parse_queue_jobs(self, result: CommandResult) -> list[SnapshotJob]:
        return snapshot.parse_queue_jobs(result, self.config.timezone)

    def cores_command(self) -> tuple[str, ...]:
        return snapshot.cores_command(self.commands)

    def parse_cores(self, result: CommandResult) -> SiteCores:
        return snapshot.parse_cores(result)

    def estimate_command(self, request: SubmitRequest, layout: JobLayout) -> SubmitCommand:
        return submit.estimate_command(self.commands, request, layout, self.config)

    def parse_estimate(self, result: CommandResult) -> StartEstimate | None:
        return submit.parse_estimate(result, self.config)


if TYPE_CHECKING:
    def _conforms(dialect: SlurmDialect) -> SchedulerDialect:
        return dialect
