"""Plain data shared by the batch-scheduler dialects and `adapters.batch.adapter.BatchAdapter`.

A dialect is a set of pure functions: it builds argv lists and batch scripts from a
`SubmitRequest`, and turns a `CommandResult` back into `JobStatus`es. These types are the
vocabulary between the two halves (no I/O here).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import Protocol

from adapters.base import ArrayRequest, Capabilities, JobStatus, NativeState, SubmitRequest
from adapters.snapshot import JobPhase, SiteCores, SnapshotJob
from adapters.snapshot import QueueInfo as QueueInfo
from adapters.transport import CommandResult
from adapters.usage import UsageRecord

# Files of one job, relative to its working directory (the same names as the local site).
STDOUT_NAME = "stdout"
STDERR_NAME = "stderr"
CONTROL_DIR = ".gridgate"
USER_SCRIPT_NAME = "script"


@dataclass(frozen=True)
class JobLayout:
    """Where one job's files live on the site."""

    workdir: str
    stdout: str
    stderr: str
    control_dir: str
    # The user's own script is stored here when the request has one; the batch script runs it.
    user_script: str

    @classmethod
    def of(cls, workdir: str) -> JobLayout:
        base = workdir.rstrip("/") or "/"
        control = f"{base}/{CONTROL_DIR}"
        return cls(
            workdir=base,
            stdout=f"{base}/{STDOUT_NAME}",
            stderr=f"{base}/{STDERR_NAME}",
            control_dir=control,
            user_script=f"{control}/{USER_SCRIPT_NAME}",
        )


@dataclass(frozen=True)
class MpiFlavor:
    """One MPI installation of a site (from its site config, so trusted text)."""

    name: str
    # The launcher and its fixed arguments; `-n <ranks>` and the program follow.
    mpirun: tuple[str, ...] = ("mpirun",)
    # Arguments that place `ranks_per_node` ranks per node; "{n}" is replaced by the number,
    # e.g. ("-ppn", "{n}") for MPICH or ("--map-by", "ppr:{n}:node") for Open MPI.
    ranks_per_node_args: tuple[str, ...] = ()
    # Slurm only: the `srun --mpi=<plugin>` this flavor needs (pmi2 for MPICH, pmix for Open MPI).
    srun_mpi: str | None = None
    # Shell lines run before the launch (`module load mpich`, ...). Written by the site admin.
    setup: tuple[str, ...] = ()


@dataclass(frozen=True)
class DialectConfig:
    """What every dialect needs to know about its site, besides binary paths."""

    # Partition (Slurm) or queue (SGE, PBS, LSF) when the request names none.
    default_queue: str | None = None
    # Account / project charged when the request names none (`-A`, `-P` on LSF).
    default_account: str | None = None
    mpi_flavors: tuple[MpiFlavor, ...] = ()
    # Flavor used when a request asks for MPI without naming one; default: the first listed.
    default_mpi_flavor: str | None = None
    # Extra scheduler options the site wants on every submission (site config, trusted).
    extra_submit_args: tuple[str, ...] = ()
    # Shell lines run at the top of every job (site config, trusted), e.g. `module purge`.
    setup: tuple[str, ...] = ()
    # The interpreter of the rendered batch script.
    shell: str = "/bin/sh"
    # Time zone of the timestamps the scheduler prints without one (its local time).
    timezone: tzinfo = UTC

    def flavor(self, name: str | None) -> MpiFlavor | None:
        """The named MPI flavor, the default one if `name` is None, or None if unknown."""
        wanted = name or self.default_mpi_flavor
        if wanted is None:
            return self.mpi_flavors[0] if self.mpi_flavors else None
        return next((f for f in self.mpi_flavors if f.name == wanted), None)


@dataclass(frozen=True)
class SubmitCommand:
    """An argv and the bytes it reads on stdin (the batch script)."""

    argv: tuple[str, ...]
    stdin: bytes | None = None


def job_phase(state: NativeState) -> JobPhase | None:
    """A job's phase in a queue snapshot: waiting or holding cores; None once it is over
    (or unknown), as a listing of the queue may still show it for a moment."""
    if state is NativeState.QUEUED:
        return JobPhase.PENDING
    return JobPhase.RUNNING if state is NativeState.RUNNING else None


@dataclass(frozen=True)
class StartEstimate:
    """When the scheduler expects a job like this one to start (not a promise)."""

    start: datetime
    queue: str | None = None
    nodes: tuple[str, ...] = ()
    processors: int | None = None
    raw: str = ""


class SchedulerDialect(Protocol):
    """Pure builders and parsers for one batch scheduler's command-line tools.

    No method performs I/O. Builders return argv tuples (never shell strings); parsers
    take the `CommandResult` of running them and raise `AdapterError`s for failures
    (`SiteUnavailable` when trying again later may help, `SubmitRejected` for a refusal).
    """

    kind: str
    config: DialectConfig
    # True when the status query itself reports finished jobs with their exit status
    # (PBS `qstat -x`, LSF `bjobs -a`); False when only accounting can say how a job ended.
    status_reports_final: bool

    @property
    def capabilities(self) -> Capabilities:
        """What this scheduler offers beyond submit, status and cancel (estimates, ...)."""
        ...

    def render_script(self, request: SubmitRequest, layout: JobLayout) -> str:
        """The batch script for the request: directives, environment, cd, launch."""
        ...

    def submit_command(self, request: SubmitRequest, layout: JobLayout) -> SubmitCommand:
        """The submit argv with the rendered script on stdin."""
        ...

    def parse_submit(self, result: CommandResult) -> str:
        """The new job's id; SubmitRejected or SiteUnavailable otherwise."""
        ...

    def status_command(self, native_ids: Sequence[str]) -> tuple[str, ...]:
        """One command asking for the state of many jobs."""
        ...

    def parse_status(
        self, result: CommandResult, native_ids: Sequence[str]
    ) -> dict[str, JobStatus]:
        """Statuses of the requested jobs the scheduler still lists."""
        ...

    def accounting_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        """Commands asking the accounting records of finished jobs ([] if there are none)."""
        ...

    def parse_accounting(self, result: CommandResult) -> dict[str, JobStatus]:
        """Final statuses found in accounting; jobs without a record are left out."""
        ...

    def usage_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        """Commands asking the usage records of jobs' ended runs ([] if there are none)."""
        ...

    def parse_usage(self, result: CommandResult) -> list[UsageRecord]:
        """A record per ended run found; runs still waiting or running are left out."""
        ...

    def cancel_command(self, native_id: str) -> tuple[str, ...]:
        """The command that cancels one job."""
        ...

    def parse_cancel(self, result: CommandResult, native_id: str) -> None:
        """Nothing when the job is cancelled or already finished; UnknownJob or an error."""
        ...

    def find_commands(self, tag: str) -> list[tuple[str, ...]]:
        """Commands that look a job up by its tag (job name), tried in order."""
        ...

    def parse_find(self, result: CommandResult, tag: str) -> str | None:
        """The id of the job named `tag` in this command's answer, if any."""
        ...

    def array_fits(self, array: ArrayRequest) -> bool:
        """Whether these indices and throttle make one native array of this scheduler."""
        ...

    def task_id(self, native_id: str, index: int) -> str:
        """The id of task `index` (the gateway's) of the array job `native_id`."""
        ...

    def parse_find_array(self, result: CommandResult, tag: str) -> str | None:
        """The id of the array job named `tag` in a find command's answer, if any."""
        ...

    def queues_command(self) -> tuple[str, ...]:
        """The command listing partitions or queues."""
        ...

    def qos_command(self) -> tuple[str, ...] | None:
        """The command listing the qualities of service (None: the scheduler has none)."""
        ...

    def parse_qos(self, result: CommandResult) -> list[str]:
        """The names of the qualities of service."""
        ...

    def parse_queues(self, result: CommandResult) -> list[QueueInfo]:
        """Partitions or queues with their limits and load."""
        ...

    def queue_jobs_command(self) -> tuple[str, ...]:
        """One command listing every pending and running job of the site (all users)."""
        ...

    def parse_queue_jobs(self, result: CommandResult) -> list[SnapshotJob]:
        """The jobs of that listing; AdapterError for an answer that is not one."""
        ...

    def cores_command(self) -> tuple[str, ...]:
        """One command saying the site's cores, total and free."""
        ...

    def parse_cores(self, result: CommandResult) -> SiteCores:
        """The site's cores (each node counted once) and its queues' where it says."""
        ...

    def estimate_command(self, request: SubmitRequest, layout: JobLayout) -> SubmitCommand | None:
        """A dry run predicting the start time, or None if the scheduler has none."""
        ...

    def parse_estimate(self, result: CommandResult) -> StartEstimate | None:
        """The predicted start, or None if the answer holds none."""
        ...

