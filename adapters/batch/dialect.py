"""`BaseDialect`: what the batch-scheduler dialects share, so each holds only its differences.

A dialect submitting `<submit command> <site extras> <the gateway's options>` with the
rendered script on stdin derives from `OptionsDialect`. Every dialect cancels with
`<cancel command> <id>` (refusing ids not of its form, and reading the same three kinds
of answer), and by default has neither a start estimate nor an accounting source; each
says where its usage records come from (`usage_commands`, `parse_usage`). A
dialect names its commands, options, script and parsers; see
adapters.batch.types.SchedulerDialect for the whole contract. Pure.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass

from adapters.base import ArrayRequest, Capabilities, JobStatus, SubmitRequest
from adapters.batch.arrays import ArrayShape
from adapters.batch.text import has_any, message, query_failed
from adapters.batch.types import (
    DialectConfig,
    JobLayout,
    QueueInfo,
    StartEstimate,
    SubmitCommand,
)
from adapters.errors import SubmitRejected, UnknownJob
from adapters.snapshot import SiteCores, cores_of_queues
from adapters.transport import CommandResult
from adapters.usage import UsageRecord
from rules.text import TextRule


@dataclass(frozen=True)
class CancelAnswers:
    """How one scheduler's cancel command answers (matched case-insensitively).

    `over`: the job is ending or already finished (the cancel is idempotent: no error);
    `unknown`: the scheduler does not know the id. Anything else that exits non-zero is a
    failed query, tried again later.
    """

    over: tuple[str, ...]
    unknown: tuple[str, ...]


class BaseDialect(ABC):
    """Shared builders and parsers; subclasses set the class attributes and implement the
    abstract methods."""

    kind: str
    # The scheduler's name in messages ("Grid Engine").
    title: str
    status_reports_final: bool
    job_id: TextRule
    cancel_answers: CancelAnswers

    def __init__(self, config: DialectConfig) -> None:
        self.config = config

    @property
    def capabilities(self) -> Capabilities:
        """Every dialect lists its queues; a dialect with more says so by overriding this."""
        return Capabilities(queue_snapshot=True)

    # -- submit ---------------------------------------------------------------------------

    @abstractmethod
    def render_script(self, request: SubmitRequest, layout: JobLayout) -> str:
        """The batch script for the request: directives, environment, cd, launch."""

    @abstractmethod
    def submit_command(self, request: SubmitRequest, layout: JobLayout) -> SubmitCommand:
        """The command that submits the request, with what it reads on stdin."""

    # -- cancel ---------------------------------------------------------------------------

    @abstractmethod
    def cancel_words(self) -> tuple[str, ...]:
        """The cancel command (`qdel`); the job id follows."""

    def cancel_command(self, native_id: str) -> tuple[str, ...]:
        """The command that cancels one job; UnknownJob for an id not of this form."""
        if not self.job_id.matches(native_id):
            raise UnknownJob(f"{native_id!r} is not a valid {self.title} job id")
        return (*self.cancel_words(), native_id)

    def parse_cancel(self, result: CommandResult, native_id: str) -> None:
        """Nothing when the job is cancelled or already over; UnknownJob or an error."""
        said = message(result)
        if has_any(said, self.cancel_answers.over):
            return
        if has_any(said, self.cancel_answers.unknown):
            raise UnknownJob(f"{self.title} does not know job {native_id}: {said}")
        if result.exit_status != 0:
            raise query_failed(result)

    # -- queues and cores ------------------------------------------------------------------

    @abstractmethod
    def queues_command(self) -> tuple[str, ...]:
        """The command listing partitions or queues."""

    @abstractmethod
    def parse_queues(self, result: CommandResult) -> list[QueueInfo]:
        """Partitions or queues with their limits and load."""

    def cores_command(self) -> tuple[str, ...]:
        """By default the queue listing, where each core belongs to one queue (see
        `parse_cores`); a scheduler that lists nodes overrides both."""
        return self.queues_command()

    def parse_cores(self, result: CommandResult) -> SiteCores:
        """The site's cores as the sum of its queues' (adapters.snapshot.cores_of_queues)."""
        return cores_of_queues(self.parse_queues(result))

    # -- what not every scheduler has -----------------------------------------------------

    def qos_command(self) -> tuple[str, ...] | None:
        """The command listing the qualities of service (None: the scheduler has none)."""
        return None

    def parse_qos(self, result: CommandResult) -> list[str]:
        """The names of the qualities of service."""
        return []

    def accounting_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        """Commands asking the accounting records of finished jobs ([] if there are none)."""
        return []

    def parse_accounting(self, result: CommandResult) -> dict[str, JobStatus]:
        """Final statuses found in accounting; jobs without a record are left out."""
        return {}

    @abstractmethod
    def usage_commands(self, native_ids: Sequence[str]) -> list[tuple[str, ...]]:
        """Commands asking the usage records of jobs' ended runs ([] if there are none)."""

    @abstractmethod
    def parse_usage(self, result: CommandResult) -> list[UsageRecord]:
        """A record per ended run found (adapters.usage); runs not over are left out."""

    def estimate_command(self, request: SubmitRequest, layout: JobLayout) -> SubmitCommand | None:
        """A dry run predicting the start time, or None if the scheduler has none."""
        return None

    # -- native job arrays (adapters.batch.arrays) -------------------------------------

    # How the scheduler numbers array tasks; None: it has no arrays.
    array_shape: ArrayShape | None = None

    def array_fits(self, array: ArrayRequest) -> bool:
        """Whether these indices and throttle make one array of this scheduler."""
        return False

    def task_id(self, native_id: str, index: int) -> str:
        """The id the scheduler gives task `index` (the gateway's) of array job `native_id`."""
        raise SubmitRejected(f"{self.title} job arrays are not supported")

    def parse_find_array(self, result: CommandResult, tag: str) -> str | None:
        """The id of the array job named `tag` in a find command's answer, if any."""
        return None

    def parse_estimate(self, result: CommandResult) -> StartEstimate | None:
        """The predicted start, or None if the answer holds none."""
        return None


class OptionsDialect(BaseDialect):
    """A dialect that submits `<submit> <site extras> <the gateway's options>` with the
    script on stdin (Grid Engine, PBS, LSF)."""

    @abstractmethod
    def submit_words(self) -> tuple[str, ...]:
        """The submit command and its fixed arguments (`qsub -terse`)."""

    @abstractmethod
    def job_options(self, request: SubmitRequest, layout: JobLayout) -> list[list[str]]:
        """The options the gateway decides, one option and its value per item."""

    def submit_command(self, request: SubmitRequest, layout: JobLayout) -> SubmitCommand:
        """`<submit> <site extras> <our options>` with the script on stdin; the site's
        extras come first so the gateway's own options win where they overlap."""
        script = self.render_script(request, layout)
        options = self.job_options(request, layout)
        argv = (*self.submit_words(), *self.config.extra_submit_args,
                *(word for option in options for word in option))
        return SubmitCommand(argv, script.encode())
