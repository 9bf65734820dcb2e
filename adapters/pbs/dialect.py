"""`PbsDialect`: PBS Professional / OpenPBS as a `SchedulerDialect` (recorded outputs only)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from adapters.base import JobStatus, SubmitRequest
from adapters.pbs import accounting, cancel, queues, status, submit
from adapters.pbs.commands import PbsCommands
from adapters.pbs.script import job_options, render_script
from adapters.scheduler_text import choose_job, lines, query_failed
from adapters.scheduler_types import (
    DialectConfig,
    JobLayout,
    QueueInfo,
    StartEstimate,
    SubmitCommand,
)
from adapters.transport import CommandResult

if TYPE_CHECKING:
    from adapters.scheduler_types import SchedulerDialect


class PbsDialect:
    """PBS Professional / OpenPBS through qsub, qstat, qselect and qdel.

    `keep_files`: qsub `-k` value; "oed" writes stdout/stderr directly to their final
    paths so they can be read while the job runs (None: PBS copies them at the end).
    `accounting_dir`: the server's accounting log directory, if the gateway account can
    read it (PBS_HOME/server_priv/accounting); used for jobs `qstat -x` no longer shows.
    """

    kind = "pbs"
    # With job history, `qstat -x` reports finished jobs with their Exit_status.
    status_reports_final = True

    def __init__(
        self,
        config: DialectConfig = DialectConfig(),
        commands: PbsCommands = PbsCommands(),
        *,
        keep_files: str | None = "oed",
        accounting_dir: str | None = None,
    ) -> None:
        self.config = config
        self.commands = commands
        self.keep_files = keep_files
        self.accounting_dir = accounting_dir

    def render_script(self, request: SubmitRequest, layout: JobLayout) -> str:
        return render_script(request, layout, self.config, keep_files=self.keep_files)

    def submit_command(self, request: SubmitRequest, layout: JobLayout) -> SubmitCommand:
        """`qsub <options>` with the script on stdin; site extras before ours."""
        script = self.render_script(request, layout)
        options = job_options(request, layout, self.config, keep_files=self.keep_files)
        argv = (self.commands.qsub, *self.config.extra_submit_args,
                *(word for option in options for word in option))
        return SubmitCommand(argv, script.encode())

    def parse_submit(self, result: CommandResult) -> str:
        return submit.parse_submit(result)

    def status_command(self, native_ids: Sequence[str]) -> tuple[str, ...]:
        return status.status_command(self.commands, native_ids)

    def parse_status(
        self, result: CommandResult, native_ids: Sequence[str]
    ) -> dict[str, JobStatus]:
        return status.parse_status(result, native_ids, self.config.timezone)

    def accounting_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        ids = [i for i in native_ids if submit.JOB_ID.matches(i)]
        if self.accounting_dir is None or not ids:
            return []
        return [accounting.accounting_command(self.commands, ids, self.accounting_dir)]

    def parse_accounting(self, result: CommandResult) -> dict[str, JobStatus]:
        return accounting.parse_accounting(result)

    def cancel_command(self, native_id: str) -> tuple[str, ...]:
        return cancel.cancel_command(self.commands, native_id)

    def parse_cancel(self, result: CommandResult, native_id: str) -> None:
        cancel.parse_cancel(result, native_id)

    def find_commands(self, tag: str) -> list[tuple[str, ...]]:
        # qselect -x: finished and moved jobs too (with job history).
        return [(self.commands.qselect, "-x", "-N", tag)]

    def parse_find(self, result: CommandResult, tag: str) -> str | None:
        if result.exit_status != 0:
            raise query_failed(result)
        return choose_job((line, False) for line in lines(result.stdout)
                          if submit.JOB_ID.matches(line))

    def queues_command(self) -> tuple[str, ...]:
        return queues.queues_command(self.commands)

    def parse_queues(self, result: CommandResult) -> list[QueueInfo]:
        return queues.parse_queues(result, self.config.default_queue)

    def estimate_command(self, request: SubmitRequest, layout: JobLayout) -> SubmitCommand | None:
        return None  # PBS estimates starts only for queued jobs (estimated.start_time).

    def parse_estimate(self, result: CommandResult) -> StartEstimate | None:
        return None


if TYPE_CHECKING:
    def _conforms(dialect: PbsDialect) -> SchedulerDialect:
        return dialect
