"""`SgeDialect`: Grid Engine commands as a `SchedulerDialect` (see adapters.scheduler_types)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from adapters.base import JobStatus, SubmitRequest
from adapters.scheduler_text import choose_job
from adapters.scheduler_types import (
    DialectConfig,
    JobLayout,
    QueueInfo,
    StartEstimate,
    SubmitCommand,
)
from adapters.sge import accounting, cancel, queues, status, submit
from adapters.sge.commands import SgeCommands
from adapters.sge.script import job_options, render_script
from adapters.transport import CommandResult

if TYPE_CHECKING:
    from adapters.scheduler_types import SchedulerDialect


class SgeDialect:
    """Grid Engine (Son of Grid Engine 8.1) through qsub, qstat, qacct and qdel.

    `parallel_environment`: the PE multi-slot jobs are submitted to (`-pe <pe> <slots>`);
    None refuses them. `memory_resource`: the per-slot consumable that carries a memory
    request (`h_vmem`, `mem_free`, ...); None sends none. `verify`: qsub's `-w` level,
    "e" rejects at submission a job that could never run.
    """

    kind = "sge"
    # qstat forgets finished jobs: how they ended comes from qacct.
    status_reports_final = False

    def __init__(
        self,
        config: DialectConfig = DialectConfig(),
        commands: SgeCommands = SgeCommands(),
        *,
        parallel_environment: str | None = None,
        memory_resource: str | None = None,
        verify: str | None = "e",
    ) -> None:
        self.config = config
        self.commands = commands
        self.parallel_environment = parallel_environment
        self.memory_resource = memory_resource
        self.verify = verify

    def render_script(self, request: SubmitRequest, layout: JobLayout) -> str:
        return render_script(
            request, layout, self.config, parallel_environment=self.parallel_environment,
            memory_resource=self.memory_resource, verify=self.verify,
        )

    def submit_command(self, request: SubmitRequest, layout: JobLayout) -> SubmitCommand:
        """`qsub -terse <options>` with the script on stdin; site extras before ours."""
        script = self.render_script(request, layout)
        options = job_options(
            request, layout, self.config, parallel_environment=self.parallel_environment,
            memory_resource=self.memory_resource, verify=self.verify,
        )
        argv = (self.commands.qsub, "-terse", *self.config.extra_submit_args,
                *(word for option in options for word in option))
        return SubmitCommand(argv, script.encode())

    def parse_submit(self, result: CommandResult) -> str:
        return submit.parse_submit(result)

    def status_command(self, native_ids: Sequence[str]) -> tuple[str, ...]:
        return status.status_command(self.commands)

    def parse_status(
        self, result: CommandResult, native_ids: Sequence[str]
    ) -> dict[str, JobStatus]:
        return status.parse_status(result, native_ids, self.config.timezone)

    def accounting_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        # qacct -j takes one job: one command per job (only jobs that just left the queue).
        return [accounting.accounting_command(self.commands, i)
                for i in native_ids if status.JOB_ID.matches(i)]

    def parse_accounting(self, result: CommandResult) -> dict[str, JobStatus]:
        return accounting.parse_accounting(result, self.config.timezone)

    def cancel_command(self, native_id: str) -> tuple[str, ...]:
        return cancel.cancel_command(self.commands, native_id)

    def parse_cancel(self, result: CommandResult, native_id: str) -> None:
        cancel.parse_cancel(result, native_id)

    def find_commands(self, tag: str) -> list[tuple[str, ...]]:
        return [status.status_command(self.commands), accounting.find_command(self.commands, tag)]

    def parse_find(self, result: CommandResult, tag: str) -> str | None:
        if result.argv[:1] == (self.commands.qstat,):
            jobs = status.parse_jobs(result, self.config.timezone)
            return choose_job((j.native_id, False) for j in jobs if j.name == tag)
        records = accounting.parse_records(result)
        return choose_job(
            (r.get("jobnumber", ""), True) for r in records
            if r.get("jobname") == tag and status.JOB_ID.matches(r.get("jobnumber", ""))
        )

    def queues_command(self) -> tuple[str, ...]:
        return queues.queues_command(self.commands)

    def parse_queues(self, result: CommandResult) -> list[QueueInfo]:
        return queues.parse_queues(result, self.config.default_queue)

    def estimate_command(self, request: SubmitRequest, layout: JobLayout) -> SubmitCommand | None:
        return None  # Grid Engine has no dry run that predicts a start time.

    def parse_estimate(self, result: CommandResult) -> StartEstimate | None:
        return None


if TYPE_CHECKING:
    def _conforms(dialect: SgeDialect) -> SchedulerDialect:
        return dialect
