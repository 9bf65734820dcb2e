"""`LsfDialect`: IBM Spectrum LSF as a `SchedulerDialect` (recorded outputs only)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from adapters.base import ArrayRequest, Capabilities, JobStatus, SubmitRequest
from adapters.batch.dialect import CancelAnswers, OptionsDialect
from adapters.batch.text import choose_job
from adapters.batch.types import DialectConfig, JobLayout, QueueInfo
from adapters.lsf import arrays, queues, snapshot, status, submit, usage
from adapters.lsf.commands import LsfCommands
from adapters.lsf.script import job_options, render_script
from adapters.snapshot import SiteCores, SnapshotJob
from adapters.transport import CommandResult
from adapters.usage import UsageRecord

if TYPE_CHECKING:
    from adapters.batch.types import SchedulerDialect


def _now() -> datetime:
    return datetime.now(UTC)


class LsfDialect(OptionsDialect):
    """LSF through bsub, bjobs, bkill and bqueues.

    `memory`: send memory requests as `rusage[mem=]` (the site's LSF_UNIT_FOR_LIMITS must be
    MB). `clock`: today's date, to give bjobs' year-less times a year. `accounting_dir`:
    the directory of the job log lsb.acct (LSB_SHAREDIR/<cluster>/logdir), if the gateway
    account can read it: usage records (adapters.lsf.usage).

    No accounting source: `bjobs -a` shows finished jobs with their exit code for LSF's
    CLEAN_PERIOD (one hour by default), well beyond a gateway's polling interval; bacct
    and bhist print free-form reports, and a job older than that window is left out of
    status answers instead of being guessed at.
    """

    kind = "lsf"
    title = "LSF"
    # `bjobs -a` shows DONE/EXIT with the exit code for CLEAN_PERIOD.
    status_reports_final = True
    job_id = status.JOB_ID
    # bkill(1): "Job <N>: Job has already finished", "Job <N>: No matching job found" (the
    # two answers PSI/J's LSF executor tolerates too).
    cancel_answers = CancelAnswers(over=("already finished",), unknown=("no matching job",))

    def __init__(
        self,
        config: DialectConfig = DialectConfig(),
        commands: LsfCommands = LsfCommands(),
        *,
        memory: bool = True,
        clock: Callable[[], datetime] = _now,
        accounting_dir: str | None = None,
    ) -> None:
        super().__init__(config)
        self.commands = commands
        self.memory = memory
        self.clock = clock
        self.accounting_dir = accounting_dir

    @property
    def capabilities(self) -> Capabilities:
        """Start estimates where the site runs LSF's estimator (LSB_ENABLE_ESTIMATION);
        usage records where the site names its lsb.acct directory."""
        return Capabilities(queue_snapshot=True, usage=self.accounting_dir is not None,
                            whole_queue=True, queue_start_estimates=True, arrays=True)

    def submit_words(self) -> tuple[str, ...]:
        return (self.commands.bsub,)

    def job_options(self, request: SubmitRequest, layout: JobLayout) -> list[list[str]]:
        return job_options(request, layout, self.config, memory=self.memory)

    def render_script(self, request: SubmitRequest, layout: JobLayout) -> str:
        return render_script(request, layout, self.config, memory=self.memory)

    def parse_submit(self, result: CommandResult) -> str:
        return submit.parse_submit(result)

    def status_command(self, native_ids: Sequence[str]) -> tuple[str, ...]:
        return status.status_command(self.commands, native_ids)

    def parse_status(
        self, result: CommandResult, native_ids: Sequence[str]
    ) -> dict[str, JobStatus]:
        return status.parse_status(result, native_ids, self.config.timezone, self.clock())

    def usage_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        if self.accounting_dir is None:
            return []
        command = usage.usage_command(self.commands, native_ids, self.accounting_dir)
        return [] if command is None else [command]

    def parse_usage(self, result: CommandResult) -> list[UsageRecord]:
        return usage.parse_usage(result)

    def cancel_words(self) -> tuple[str, ...]:
        return (self.commands.bkill,)

    def find_commands(self, tag: str) -> list[tuple[str, ...]]:
        return [status.find_command(self.commands, tag)]

    def parse_find(self, result: CommandResult, tag: str) -> str | None:
        now = self.clock()
        jobs = [status.record_status(r, self.config.timezone, now)
                for r in status.records(result) if r.get("JOB_NAME") == tag]
        return choose_job((j.native_id, j.state.is_final) for j in jobs if j.native_id)

    array_shape = arrays.SHAPE

    def array_fits(self, array: ArrayRequest) -> bool:
        """Any index list (bsub takes lists of ranges), numbered from 1."""
        return bool(array.indices) and min(array.indices) >= 0

    def task_id(self, native_id: str, index: int) -> str:
        return arrays.task_id(native_id, index)

    def parse_find_array(self, result: CommandResult, tag: str) -> str | None:
        """`bjobs -J tag` lists an array's elements, each named `tag[N]`."""
        now = self.clock()
        jobs = [status.record_status(r, self.config.timezone, now)
                for r in status.records(result) if arrays.is_element_of(r, tag)]
        return choose_job((j.native_id.partition("[")[0], False) for j in jobs if j.native_id)

    def queue_jobs_command(self) -> tuple[str, ...]:
        return snapshot.queue_jobs_command(self.commands)

    def parse_queue_jobs(self, result: CommandResult) -> list[SnapshotJob]:
        return snapshot.parse_queue_jobs(result, self.config.timezone, self.clock())

    def cores_command(self) -> tuple[str, ...]:
        return snapshot.cores_command(self.commands)

    def parse_cores(self, result: CommandResult) -> SiteCores:
        return snapshot.parse_cores(result)

    def queues_command(self) -> tuple[str, ...]:
        return queues.queues_command(self.commands)

    def parse_queues(self, result: CommandResult) -> list[QueueInfo]:
        return queues.parse_queues(result, self.config.default_queue)


if TYPE_CHECKING:
    def _conforms(dialect: LsfDialect) -> SchedulerDialect:
        return dialect
