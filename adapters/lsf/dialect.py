"""`LsfDialect`: IBM Spectrum LSF as a `SchedulerDialect` (recorded outputs only)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from adapters.base import JobStatus, SubmitRequest
from adapters.lsf import accounting, cancel, queues, status, submit
from adapters.lsf.commands import LsfCommands
from adapters.lsf.script import job_options, render_script
from adapters.scheduler_text import choose_job
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


def _now() -> datetime:
    return datetime.now(UTC)


class LsfDialect:
    """LSF through bsub, bjobs, bkill and bqueues.

    `memory`: send memory requests as `rusage[mem=]` (the site's LSF_UNIT_FOR_LIMITS must be
    MB). `clock`: today's date, to give bjobs' year-less times a year.
    """

    kind = "lsf"
    # `bjobs -a` shows DONE/EXIT with the exit code for CLEAN_PERIOD.
    status_reports_final = True

    def __init__(
        self,
        config: DialectConfig = DialectConfig(),
        commands: LsfCommands = LsfCommands(),
        *,
        memory: bool = True,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self.config = config
        self.commands = commands
        self.memory = memory
        self.clock = clock

    def render_script(self, request: SubmitRequest, layout: JobLayout) -> str:
        return render_script(request, layout, self.config, memory=self.memory)

    def submit_command(self, request: SubmitRequest, layout: JobLayout) -> SubmitCommand:
        """`bsub <options>` with the script on stdin; site extras before ours."""
        script = self.render_script(request, layout)
        options = job_options(request, layout, self.config, memory=self.memory)
        argv = (self.commands.bsub, *self.config.extra_submit_args,
                *(word for option in options for word in option))
        return SubmitCommand(argv, script.encode())

    def parse_submit(self, result: CommandResult) -> str:
        return submit.parse_submit(result)

    def status_command(self, native_ids: Sequence[str]) -> tuple[str, ...]:
        return status.status_command(self.commands, native_ids)

    def parse_status(
        self, result: CommandResult, native_ids: Sequence[str]
    ) -> dict[str, JobStatus]:
        return status.parse_status(result, native_ids, self.config.timezone, self.clock())

    def accounting_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        return accounting.accounting_commands()

    def parse_accounting(self, result: CommandResult) -> dict[str, JobStatus]:
        return {}

    def cancel_command(self, native_id: str) -> tuple[str, ...]:
        return cancel.cancel_command(self.commands, native_id)

    def parse_cancel(self, result: CommandResult, native_id: str) -> None:
        cancel.parse_cancel(result, native_id)

    def find_commands(self, tag: str) -> list[tuple[str, ...]]:
        return [status.find_command(self.commands, tag)]

    def parse_find(self, result: CommandResult, tag: str) -> str | None:
        now = self.clock()
        jobs = [status.record_status(r, self.config.timezone, now)
                for r in status.records(result) if r.get("JOB_NAME") == tag]
        return choose_job((j.native_id, j.state.is_final) for j in jobs if j.native_id)

    def queues_command(self) -> tuple[str, ...]:
        return queues.queues_command(self.commands)

    def parse_queues(self, result: CommandResult) -> list[QueueInfo]:
        return queues.parse_queues(result, self.config.default_queue)

    def estimate_command(self, request: SubmitRequest, layout: JobLayout) -> SubmitCommand | None:
        return None  # LSF predicts starts only for pending jobs (bjobs -l).

    def parse_estimate(self, result: CommandResult) -> StartEstimate | None:
        return None


if TYPE_CHECKING:
    def _conforms(dialect: LsfDialect) -> SchedulerDialect:
        return dialect
