"""The adapter interface: what the gateway asks of every site, in plain data.

Adapters take explicit arguments and never read the gateway's settings, files or
database. Results use the gateway's state vocabulary (as plain strings) and keep
the scheduler's own raw state and reason beside it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Literal, Protocol, cast

from adapters.errors import AdapterError
from adapters.reasons import StatusReason
from adapters.snapshot import QueueSnapshot
from adapters.transport import FileTransport

if TYPE_CHECKING:
    from adapters.usage import UsageRecord

OutputStream = Literal["stdout", "stderr"]


class NativeState(StrEnum):
    """A scheduler job's state, mapped onto the gateway's vocabulary."""

    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"
    # The scheduler said something we have no mapping for; never treated as final.
    UNKNOWN = "UNKNOWN"

    @property
    def is_final(self) -> bool:
        return self in (NativeState.COMPLETED, NativeState.FAILED, NativeState.CANCELLED)


@dataclass(frozen=True)
class Resources:
    nodes: int = 1
    ranks: int = 1
    ranks_per_node: int | None = None
    threads_per_rank: int = 1
    memory_mb: int | None = None
    walltime_seconds: int = 3600
    # Node-local scratch disk per node (Slurm --tmp, LSF rusage[tmp]).
    scratch_mb: int | None = None


@dataclass(frozen=True)
class MpiRequest:
    launcher: Literal["none", "mpirun", "srun"] = "none"
    flavor: str | None = None


# In a job directory: each step's exit code, one line per step run (several steps only).
STEP_CODES_FILE = ".gridgate-steps"


@dataclass(frozen=True)
class LaunchStep:
    """A launch line run after the first one (a GA4GH TES task's next executor); a
    failure ends the job with its exit code unless `ignore_error`."""

    argv: tuple[str, ...]
    ignore_error: bool = False


@dataclass(frozen=True)
class ContainerLaunch:
    """A containerised program, built by the gateway (containers.launch): `argv` is the
    whole launch line (MPI launcher, runtime, image, program) and replaces the request's
    program and MPI launcher; `prepare` are commands run before it, each of which must
    succeed (e.g. a locked `apptainer pull` into the site's cache). Words are data.
    `reads` are directories outside the job directory the launch line reads (ch-run's
    unpacked image in the site's cache): a site that sandboxes jobs shows them read-only.
    `then`: launch lines run after it in order, in the same allocation and directory;
    `ignore_error`: the steps after `argv` run, and the job goes on, even when it fails."""

    argv: tuple[str, ...]
    prepare: tuple[tuple[str, ...], ...] = ()
    reads: tuple[str, ...] = ()
    then: tuple[LaunchStep, ...] = ()
    ignore_error: bool = False

    @property
    def steps(self) -> tuple[LaunchStep, ...]:
        """Every launch line in order, the first one included."""
        return (LaunchStep(self.argv, self.ignore_error), *self.then)

    @property
    def stepwise(self) -> bool:
        """Whether its lines run as steps (each exit code recorded), not as one program."""
        return bool(self.then) or self.ignore_error


@dataclass(frozen=True)
class ArrayRequest:
    """A native job array: one submission whose tasks have these gateway indices (sorted,
    each once) and of which at most `throttle` run at once (None: no limit). Each task
    runs in `<workdir>/<index>` with its index in GRIDGATE_ARRAY_TASK_ID, whatever the
    scheduler's own numbering (adapters.batch.arrays)."""

    indices: tuple[int, ...]
    throttle: int | None = None


@dataclass(frozen=True)
class SubmitRequest:
    """Everything a site needs to run one attempt. Strings are data, never shell code.
    With `container`, `argv` still names the user's program (for the record) and the
    container's launch line is what runs."""

    tag: str
    workdir: str
    argv: Sequence[str] | None = None
    script: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    resources: Resources = Resources()
    mpi: MpiRequest = MpiRequest()
    partition: str | None = None
    account: str | None = None
    # A quality of service the site offers (only schedulers whose entry has `qos`).
    qos: str | None = None
    container: ContainerLaunch | None = None
    # A native job array: `workdir` is the array's directory, `tag` names the whole array.
    array: ArrayRequest | None = None


@dataclass(frozen=True)
class JobStatus:
    """What the scheduler says about one job."""

    native_id: str
    state: NativeState
    raw_state: str
    reason: StatusReason | None = None
    exit_code: int | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None


@dataclass(frozen=True)
class OutputChunk:
    data: bytes
    offset: int
    # Size of the whole file when read; None when it does not exist (yet).
    size: int | None


@dataclass(frozen=True)
class Capabilities:
    """What an adapter offers beyond the core operations every adapter has (submit, find
    by tag, status, queue snapshot, cancel, output). The gateway asks these instead of
    probing methods."""

    # `submit_many`: many plain jobs (no user script) in one round trip (BatchSubmitter).
    batch_submit: bool = False
    # `queues()`: partitions or queues with their limits and load (on its own; every
    # adapter has `queue_snapshot()`, which includes them where the scheduler says).
    queue_snapshot: bool = False
    # `estimate_start()`: the scheduler's own guess of when a job would start.
    start_estimate: bool = False
    # `accounting()`: final records of jobs the queue no longer lists.
    accounting: bool = False
    # `usage()`: the site's own usage record of each ended run of a job (what a charge is
    # computed from); without it the gateway has only its own estimate.
    usage: bool = False
    # `queue_snapshot()` lists every user's jobs, not only the gateway's (unless the site
    # hides them from its account: Slurm PrivateData=jobs, PBS query_other_jobs=false).
    whole_queue: bool = False
    # `queue_snapshot()` gives pending jobs the scheduler's own start estimate (when the
    # scheduler has computed one: Slurm's backfill plan, PBS, LSF's estimator).
    queue_start_estimates: bool = False
    # Job arrays: one submission, many indexed tasks (`SubmitRequest.array`, the dialect's
    # task ids: adapters.batch.arrays).
    arrays: bool = False
    # `on_change()`: the adapter tells at once when one of its jobs may have ended (a local
    # job's runner exited), so the gateway asks about it then, not at its next cycle.
    change_wakes: bool = False

    def names(self) -> list[str]:
        """The capabilities offered, as words for reports (`gridgate site check`)."""
        return [name.replace("_", " ") for name, offered in vars(self).items() if offered]


class Adapter(Protocol):
    """A site's scheduler, as the gateway sees it."""

    kind: str

    @property
    def capabilities(self) -> Capabilities:
        """What this adapter offers besides the operations below."""
        ...

    @property
    def files(self) -> FileTransport:
        """Moves files to and from the site as this adapter's account (staging)."""
        ...

    def submit(self, request: SubmitRequest) -> str:
        """Submit and return the scheduler's job id. Raises SubmitRejected or SiteUnavailable."""
        ...

    def find_by_tag(self, tag: str, workdir: str) -> str | None:
        """The id of a job already submitted with this tag, if any (crash recovery)."""
        ...

    def status(self, native_ids: Sequence[str], *,
               cancelled: Collection[str] = ()) -> Mapping[str, JobStatus]:
        """Status of many jobs in one round trip; ids the site cannot find are omitted.
        `cancelled`: those of them the gateway asked to cancel (it keeps that record),
        so a job that then vanished or was killed reads as CANCELLED."""
        ...

    def queue_snapshot(self) -> QueueSnapshot:
        """The site's cores and every pending and running job of its queue, now: one call
        per site and routing cycle (a few commands, never one per job)."""
        ...

    def cancel(self, native_id: str) -> None:
        """Ask the scheduler to cancel; idempotent."""
        ...

    def usage(self, native_ids: Sequence[str]) -> list[UsageRecord]:
        """The site's usage record of every ended run of these jobs (adapters.usage);
        runs not over and jobs without a record are left out, [] where the site keeps
        none (`capabilities.usage` says whether it does)."""
        ...

    def read_output(
        self, workdir: str, stream: OutputStream, offset: int, limit: int
    ) -> OutputChunk:
        """Up to `limit` bytes of the job's stdout or stderr from `offset`."""
        ...


class BatchSubmitter(Adapter, Protocol):
    """An adapter that also submits many plain jobs (no user script) in one go."""

    def submit_many(self, requests: Sequence[SubmitRequest]) -> list[str | AdapterError]:
        """For each request its job id, or the error that stopped it (see BatchAdapter)."""
        ...


def batch_submitter(adapter: Adapter) -> BatchSubmitter | None:
    """`adapter` as a BatchSubmitter when its capabilities say it submits in batches.

    The capability is the adapter's own statement; the cast only tells the type checker.
    """
    return cast(BatchSubmitter, adapter) if adapter.capabilities.batch_submit else None


class ArraySubmitter(Adapter, Protocol):
    """An adapter that submits a native job array (`SubmitRequest.array`) in one go."""

    def array_fits(self, array: ArrayRequest) -> bool:
        """Whether the scheduler can take these indices and throttle as one array."""
        ...

    def task_ids(self, native_id: str, indices: Sequence[int]) -> dict[int, str]:
        """The id of each task (by gateway index) of the array job `native_id`; each is
        asked about, cancelled and charged like a job of its own."""
        ...

    def find_array_by_tag(self, tag: str) -> str | None:
        """The id of an array job already submitted with this tag, if any (recovery)."""
        ...


def array_submitter(adapter: Adapter) -> ArraySubmitter | None:
    """`adapter` as an ArraySubmitter when its capabilities say it submits native arrays."""
    return cast(ArraySubmitter, adapter) if adapter.capabilities.arrays else None


class ChangeNotifier(Adapter, Protocol):
    """An adapter that tells when one of its jobs may have changed state."""

    def on_change(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` (from a thread of the adapter's, quickly, without arguments)
        whenever one of its jobs may have ended; returns the function that stops it.
        A call says only "ask me again": several changes may make one call, and a call
        may come for nothing."""
        ...


def change_notifier(adapter: Adapter) -> ChangeNotifier | None:
    """`adapter` as a ChangeNotifier when its capabilities say it tells of changes."""
    return cast(ChangeNotifier, adapter) if adapter.capabilities.change_wakes else None
