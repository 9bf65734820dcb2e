"""`SgeDialect`: Grid Engine commands as a `SchedulerDialect` (see adapters.batch.types)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from adapters.base import ArrayRequest, Capabilities, JobStatus, SubmitRequest
from adapters.batch.arrays import is_single_run
from adapters.batch.dialect import CancelAnswers, OptionsDialect
from adapters.batch.text import choose_job
from adapters.batch.types import DialectConfig, JobLayout, QueueInfo
from adapters.sge import accounting, arrays, queues, snapshot, status, submit, usage
from adapters.sge.commands import SgeCommands
from adapters.sge.script import job_options, render_script
from adapters.snapshot import SnapshotJob
from adapters.transport import CommandResult
from adapters.usage import UsageRecord

if TYPE_CHECKING:
    from adapters.batch.types import SchedulerDialect


class SgeDialect(OptionsDialect):
    """Grid Engine (Son of Grid Engine 8.1) through qsub, qstat, qacct and qdel.

    `parallel_environment`: the PE multi-slot jobs are submitted to (`-pe <pe> <slots>`);
    None refuses them. `memory_resource`: the per-slot consumable that carries a memory
    request (`h_vmem`, `mem_free`, ...); None sends none. `scratch_resource`: the same for
    node-local scratch disk (e.g. a `tmpfree` complex the site defines). `verify`: qsub's
    `-w` level, "e" rejects at submission a job that could never run.
    """

    kind = "sge"
    title = "Grid Engine"
    # qstat forgets finished jobs: how they ended comes from qacct.
    status_reports_final = False
    job_id = status.JOB_ID
    # qmaster answers "<user> has registered the job <id> for deletion" (running: qacct
    # records how it ended) or "<user> has deleted job <id>" (pending: no accounting record
    # at all), and `denied: job "<id>" does not exist` for an unknown or finished job.
    cancel_answers = CancelAnswers(over=(), unknown=("does not exist",))

    def __init__(
        self,
        config: DialectConfig = DialectConfig(),
        commands: SgeCommands = SgeCommands(),
        *,
        parallel_environment: str | None = None,
        memory_resource: str | None = None,
        scratch_resource: str | None = None,
        verify: str | None = "e",
    ) -> None:
        super().__init__(config)
        self.commands = commands
        self.parallel_environment = parallel_environment
        self.memory_resource = memory_resource
        self.scratch_resource = scratch_resource
        self.verify = verify

    @property
    def capabilities(self) -> Capabilities:
        return Capabilities(queue_snapshot=True, accounting=True, usage=True, whole_queue=True,
                            arrays=True)

    def submit_words(self) -> tuple[str, ...]:
        return (self.commands.qsub, "-terse")

    def job_options(self, request: SubmitRequest, layout: JobLayout) -> list[list[str]]:
        return job_options(
            request, layout, self.config, parallel_environment=self.parallel_environment,
            memory_resource=self.memory_resource, verify=self.verify,
            scratch_resource=self.scratch_resource,
        )

    def render_script(self, request: SubmitRequest, layout: JobLayout) -> str:
        return render_script(
            request, layout, self.config, parallel_environment=self.parallel_environment,
            memory_resource=self.memory_resource, verify=self.verify,
            scratch_resource=self.scratch_resource,
        )

    def parse_submit(self, result: CommandResult) -> str:
        return submit.parse_submit(result)

    def status_command(self, native_ids: Sequence[str]) -> tuple[str, ...]:
        return status.status_command(self.commands)

    def parse_status(
        self, result: CommandResult, native_ids: Sequence[str]
    ) -> dict[str, JobStatus]:
        return status.parse_status(result, native_ids, self.config.timezone)

    def accounting_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        # qacct -j takes one job: one command per job (only jobs that just left the queue);
        # an array's tasks come with their job's.
        jobs = dict.fromkeys(arrays.split(i)[0] for i in native_ids)
        return [accounting.accounting_command(self.commands, i)
                for i in jobs if status.JOB_ID.matches(i)]

    def parse_accounting(self, result: CommandResult) -> dict[str, JobStatus]:
        return accounting.parse_accounting(result, self.config.timezone)

    def usage_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        return usage.usage_commands(self.commands, native_ids)

    def parse_usage(self, result: CommandResult) -> list[UsageRecord]:
        return usage.parse_usage(result, self.config.timezone)

    def cancel_words(self) -> tuple[str, ...]:
        return (self.commands.qdel,)

    def cancel_command(self, native_id: str) -> tuple[str, ...]:
        """`qdel JOB`, or `qdel JOB -t TASK` for one task of an array job."""
        job, task = arrays.split(native_id)
        if task is None:
            return super().cancel_command(native_id)
        return (*self.cancel_words(), job, "-t", task)

    array_shape = arrays.SHAPE

    def array_fits(self, array: ArrayRequest) -> bool:
        """One range with a step (all `-t` takes)."""
        return bool(array.indices) and min(array.indices) >= 0 and is_single_run(array)

    def task_id(self, native_id: str, index: int) -> str:
        return arrays.task_id(native_id, index)

    def parse_find_array(self, result: CommandResult, tag: str) -> str | None:
        """An array job by its name: every line and record of it names the job."""
        return self.parse_find(result, tag)

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

    def queue_jobs_command(self) -> tuple[str, ...]:
        return snapshot.queue_jobs_command(self.commands)

    def parse_queue_jobs(self, result: CommandResult) -> list[SnapshotJob]:
        return snapshot.parse_queue_jobs(result, self.config.timezone)

    def queues_command(self) -> tuple[str, ...]:
        return queues.queues_command(self.commands)

    def parse_queues(self, result: CommandResult) -> list[QueueInfo]:
        return queues.parse_queues(result, self.config.default_queue)


if TYPE_CHECKING:
    def _conforms(dialect: SgeDialect) -> SchedulerDialect:
        return dialect
