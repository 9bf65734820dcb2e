"""`PbsDialect`: PBS Professional / OpenPBS as a `SchedulerDialect` (recorded outputs only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from adapters.base import ArrayRequest, Capabilities, JobStatus, SubmitRequest
from adapters.batch.dialect import CancelAnswers, OptionsDialect
from adapters.batch.text import choose_job, lines, query_failed
from adapters.batch.types import DialectConfig, JobLayout, QueueInfo
from adapters.pbs import (
    accounting,
    arrays,
    queues,
    snapshot,
    status,
    submit,
    torque,
    torque_snapshot,
    usage,
)
from adapters.pbs.commands import PbsCommands
from adapters.pbs.script import job_options, render_script
from adapters.snapshot import SiteCores, SnapshotJob
from adapters.transport import CommandResult
from adapters.usage import UsageRecord

if TYPE_CHECKING:
    from adapters.batch.types import SchedulerDialect


class PbsDialect(OptionsDialect):
    """PBS Professional / OpenPBS (or TORQUE) through qsub, qstat, qselect and qdel.

    `keep_files`: qsub `-k` value; "oed" writes stdout/stderr directly to their final
    paths so they can be read while the job runs (None: PBS copies them at the end).
    `accounting_dir`: the server's accounting log directory, if the gateway account can
    read it (PBS_HOME/server_priv/accounting); used for jobs `qstat` no longer shows.
    `torque`: the server is TORQUE, whose commands differ (adapters.pbs.torque).
    `scratch_resource`: the host-level resource a chunk asks node-local scratch disk with
    (PBS has none built in; TORQUE's `file` limits one file): None sends none.
    """

    kind = "pbs"
    title = "PBS"
    # With job history, `qstat -x` reports finished jobs with their Exit_status.
    status_reports_final = True
    job_id = submit.JOB_ID
    # qdel.1B: "Unknown Job Id <id>"; a finished job (kept with job history) or one ending;
    # TORQUE: "invalid state for job - COMPLETE <id>".
    cancel_answers = CancelAnswers(
        over=("Job has finished", "Request invalid for state of job", "invalid state for job"),
        unknown=("Unknown Job Id",))

    def __init__(
        self,
        config: DialectConfig = DialectConfig(),
        commands: PbsCommands = PbsCommands(),
        *,
        keep_files: str | None = "oed",
        accounting_dir: str | None = None,
        torque: bool = False,
        scratch_resource: str | None = None,
    ) -> None:
        super().__init__(config)
        self.commands = commands
        self.keep_files = keep_files
        self.accounting_dir = accounting_dir
        self.torque = torque
        self.scratch_resource = scratch_resource

    @property
    def capabilities(self) -> Capabilities:
        """Accounting records from the server's log, when the site names its directory;
        start estimates from PBS Professional's scheduler, not TORQUE."""
        readable = self.accounting_dir is not None
        return Capabilities(queue_snapshot=True, accounting=readable, usage=readable,
                            whole_queue=True, queue_start_estimates=not self.torque,
                            arrays=not self.torque)

    def submit_words(self) -> tuple[str, ...]:
        return (self.commands.qsub,)

    def job_options(self, request: SubmitRequest, layout: JobLayout) -> list[list[str]]:
        return job_options(request, layout, self.config, keep_files=self.keep_files,
                           torque=self.torque, scratch_resource=self.scratch_resource)

    def render_script(self, request: SubmitRequest, layout: JobLayout) -> str:
        return render_script(request, layout, self.config, keep_files=self.keep_files,
                             torque=self.torque, scratch_resource=self.scratch_resource)

    def parse_submit(self, result: CommandResult) -> str:
        return submit.parse_submit(result)

    def status_command(self, native_ids: Sequence[str]) -> tuple[str, ...]:
        if self.torque:
            return torque.status_command(self.commands, native_ids)
        return status.status_command(self.commands, native_ids)

    def parse_status(
        self, result: CommandResult, native_ids: Sequence[str]
    ) -> dict[str, JobStatus]:
        if self.torque:
            return torque.parse_status(result, native_ids)
        return status.parse_status(result, native_ids, self.config.timezone)

    def accounting_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        ids = [i for i in native_ids if submit.JOB_ID.matches(i)]
        if self.accounting_dir is None or not ids:
            return []
        return [accounting.accounting_command(self.commands, ids, self.accounting_dir)]

    def parse_accounting(self, result: CommandResult) -> dict[str, JobStatus]:
        return accounting.parse_accounting(result)

    def usage_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        """TORQUE writes the same log records as PBS Professional (adapters.pbs.usage)."""
        ids = [i for i in native_ids if submit.JOB_ID.matches(i)]
        if self.accounting_dir is None or not ids:
            return []
        return [usage.usage_command(self.commands, ids, self.accounting_dir)]

    def parse_usage(self, result: CommandResult) -> list[UsageRecord]:
        return usage.parse_usage(result)

    def cancel_words(self) -> tuple[str, ...]:
        return (self.commands.qdel,)

    def find_commands(self, tag: str) -> list[tuple[str, ...]]:
        if self.torque:
            return [torque.find_command(self.commands, tag)]
        # qselect -x: finished and moved jobs too (with job history).
        return [(self.commands.qselect, "-x", "-N", tag)]

    def parse_find(self, result: CommandResult, tag: str) -> str | None:
        if result.exit_status != 0:
            raise query_failed(result)
        return choose_job((line, False) for line in lines(result.stdout)
                          if submit.JOB_ID.matches(line))

    array_shape = arrays.SHAPE

    def array_fits(self, array: ArrayRequest) -> bool:
        """PBS Professional's `-J`: one range with a step, two subjobs or more."""
        return not self.torque and arrays.fits(array)

    def task_id(self, native_id: str, index: int) -> str:
        return arrays.task_id(native_id, index)

    def parse_find_array(self, result: CommandResult, tag: str) -> str | None:
        """qselect -N lists an array job by its own id (`123[].server`)."""
        return self.parse_find(result, tag)

    def queue_jobs_command(self) -> tuple[str, ...]:
        if self.torque:
            return torque_snapshot.queue_jobs_command(self.commands)
        return snapshot.queue_jobs_command(self.commands)

    def parse_queue_jobs(self, result: CommandResult) -> list[SnapshotJob]:
        if self.torque:
            return torque_snapshot.parse_queue_jobs(result)
        return snapshot.parse_queue_jobs(result, self.config.timezone)

    def cores_command(self) -> tuple[str, ...]:
        if self.torque:
            return torque_snapshot.cores_command(self.commands)
        return snapshot.cores_command(self.commands)

    def parse_cores(self, result: CommandResult) -> SiteCores:
        if self.torque:
            return torque_snapshot.parse_cores(result)
        return snapshot.parse_cores(result)

    def queues_command(self) -> tuple[str, ...]:
        if self.torque:
            return torque.queues_command(self.commands)
        return queues.queues_command(self.commands)

    def parse_queues(self, result: CommandResult) -> list[QueueInfo]:
        if self.torque:
            return torque.parse_queues(result, self.config.default_queue)
        return queues.parse_queues(result, self.config.default_queue)


if TYPE_CHECKING:
    def _conforms(dialect: PbsDialect) -> SchedulerDialect:
        return dialect
