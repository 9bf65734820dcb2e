"""`BatchAdapter`: the gateway's `Adapter` for any batch scheduler reached through a `Transport`.

The adapter does the I/O: it creates the job directory, stores the user's script, runs
the commands a `SchedulerDialect` builds (Slurm, Grid Engine, PBS, LSF) and hands their
results back to the dialect's parsers. It holds no scheduler knowledge of its own except
the gateway's rules that apply to all of them:

- completion is never inferred from a job's absence in the queue: a job the status query
  no longer lists (or lists as finished, when the dialect says only accounting knows how a
  job ended) is looked up in accounting, and a job found nowhere is left out of the answer;
- a job the queue lists as finished but accounting has no record of its end yet is left
  out of the answer too, for up to `record_grace` seconds: the exit code is in that record.
  slurmdbd lags slurmctld (measured on the testbed: sacct prints nothing for a job that
  has just been submitted, and still PENDING for an `exit 3` job squeue already shows
  FAILED). Past the grace, the queue's final word stands without an exit code; a site
  whose accounting cannot be asked at all (disabled, down) keeps the queue's word at once;
- a job the gateway cancelled and that then ended by a signal is CANCELLED, and one that
  vanished without any record after our cancel (Grid Engine keeps no accounting record of a
  job deleted while pending) is CANCELLED too. Which jobs were cancelled the caller says
  (`status(..., cancelled=...)`): the gateway's database is the one record of a cancel, and
  it survives restarts and crashes (see gateway.worker.cancel).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import cast

from adapters.base import (
    ArrayRequest,
    Capabilities,
    JobStatus,
    NativeState,
    OutputChunk,
    OutputStream,
    SubmitRequest,
)
from adapters.batch.bulk_submit import (
    MKDIR_FAILED,
    BatchItem,
    batch_script,
    parse_batch,
    script_bytes,
)
from adapters.batch.text import message
from adapters.batch.types import (
    JobLayout,
    QueueInfo,
    SchedulerDialect,
    StartEstimate,
)
from adapters.errors import AdapterError, SiteUnavailable
from adapters.reasons import Reason, because
from adapters.snapshot import QueueSnapshot
from adapters.transport import CommandResult, FileTransport, Transport
from adapters.usage import UsageRecord

log = logging.getLogger(__name__)

VANISHED_AFTER_CANCEL = Reason.VANISHED_AFTER_CANCEL
# One batch submission command stays well below the 128 KiB a single argument may have.
BATCH_SCRIPT_BYTES = 64 << 10
# A shell's exit code from 128 up means "killed by a signal".
_SIGNAL_EXIT = 128


class BatchAdapter:
    """Runs jobs on a batch scheduler over `transport`, speaking `dialect`."""

    def __init__(
        self,
        transport: Transport,
        dialect: SchedulerDialect,
        *,
        command_timeout: float = 60.0,
        submit_timeout: float = 120.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        record_grace: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """`clock`: the time a queue snapshot is taken at (UTC); `record_grace`: how long
        a job the queue shows finished waits for its accounting record (see module)."""
        self.kind = dialect.kind
        self.transport = transport
        self.dialect = dialect
        self.command_timeout = command_timeout
        self.submit_timeout = submit_timeout
        self.clock = clock
        self.record_grace = record_grace
        self.monotonic = monotonic
        # Job id -> when (monotonic) the queue first showed it finished without a record.
        self._awaiting_record: dict[str, float] = {}

    @property
    def capabilities(self) -> Capabilities:
        """The dialect's, plus batch submission (one remote command for many jobs)."""
        return replace(self.dialect.capabilities, batch_submit=True)

    @property
    def files(self) -> FileTransport:
        """The transport, when it can stream files (SSH and local ones do)."""
        if not (hasattr(self.transport, "upload") and hasattr(self.transport, "download")):
            raise AdapterError(f"the {self.kind} site's transport cannot move files")
        return cast(FileTransport, self.transport)

    # -- submit ---------------------------------------------------------------------------

    def render_script(self, request: SubmitRequest) -> str:
        """The batch script `submit` would send (for display and site checks)."""
        return self.dialect.render_script(request, JobLayout.of(request.workdir))

    def submit(self, request: SubmitRequest) -> str:
        """Create the job directory, store the user's script, submit; returns the job id.

        A timeout or a lost answer raises SiteUnavailable: the job may exist, and the
        gateway's recovery finds it by its tag before it submits again.
        """
        layout = JobLayout.of(request.workdir)
        # Built first: an invalid request is refused before anything touches the site.
        command = self.dialect.submit_command(request, layout)
        argv: Sequence[str] = command.argv
        if request.script is not None:
            self._mkdir(layout.workdir, layout.control_dir)
            self.transport.put_bytes(request.script.encode(), layout.user_script, mode=0o700)
        else:
            # Nothing to store first: create the directories in the submit's own round trip.
            argv = _after_mkdir(layout.workdir, layout.control_dir, command.argv)
        result = self.transport.run(argv, stdin=command.stdin, timeout=self.submit_timeout)
        if result.exit_status == MKDIR_FAILED:
            raise SiteUnavailable(f"cannot create {layout.workdir} on the site: {message(result)}")
        return self.dialect.parse_submit(result)

    def submit_many(self, requests: Sequence[SubmitRequest],
                    max_script_bytes: int = BATCH_SCRIPT_BYTES) -> list[str | AdapterError]:
        """Submit jobs without a user script, as few remote commands as the size limit
        allows; for each request its job id, or the error that stopped it (SubmitRejected
        when refused; a transient SiteUnavailable when its answer is missing: the job may
        exist, and recovery finds it by its tag). A failed command raises for all."""
        outcomes: list[str | AdapterError | None] = [None] * len(requests)
        batch: list[tuple[int, BatchItem]] = []
        size = 0
        for index, request in enumerate(requests):
            if request.script is not None:
                raise ValueError("submit_many takes jobs without a user script")
            layout = JobLayout.of(request.workdir)
            try:
                command = self.dialect.submit_command(request, layout)
            except AdapterError as exc:  # refused before anything touches the site
                outcomes[index] = exc
                continue
            item = BatchItem(layout.workdir, layout.control_dir, command.argv, command.stdin)
            item_bytes = script_bytes(item)
            if batch and size + item_bytes > max_script_bytes:
                self._run_batch(batch, outcomes)
                batch, size = [], 0
            batch.append((index, item))
            size += item_bytes
        if batch:
            self._run_batch(batch, outcomes)
        return [o if o is not None else SiteUnavailable("no answer for this submission")
                for o in outcomes]

    def _run_batch(self, batch: Sequence[tuple[int, BatchItem]],
                   outcomes: list[str | AdapterError | None]) -> None:
        items = [item for _, item in batch]
        result = self.transport.run(["sh", "-c", batch_script(items)],
                                    timeout=self.submit_timeout * max(1, len(items) // 10))
        answers = parse_batch(result.stdout, [item.argv for item in items])
        for position, (index, item) in enumerate(batch):
            answer = answers.get(position)
            if answer is None:
                continue  # left None: no answer
            try:
                if answer.exit_status == MKDIR_FAILED:
                    raise SiteUnavailable(
                        f"cannot create {item.workdir} on the site: {message(answer)}")
                outcomes[index] = self.dialect.parse_submit(answer)
            except AdapterError as exc:
                outcomes[index] = exc

    # -- native job arrays ----------------------------------------------------------------

    def array_fits(self, array: ArrayRequest) -> bool:
        """Whether the scheduler takes these indices and throttle as one array."""
        return self.dialect.capabilities.arrays and self.dialect.array_fits(array)

    def task_ids(self, native_id: str, indices: Sequence[int]) -> dict[int, str]:
        """Each task's id (by gateway index) in the array job `native_id`."""
        return {index: self.dialect.task_id(native_id, index) for index in indices}

    def find_array_by_tag(self, tag: str) -> str | None:
        """The id of the array job named `tag` (queue first, then accounting), if any."""
        for argv in self.dialect.find_commands(tag):
            found = self.dialect.parse_find_array(self._run(argv), tag)
            if found is not None:
                return found
        return None

    def estimate_start(self, request: SubmitRequest) -> StartEstimate | None:
        """The scheduler's guess of when this request would start (Slurm `--test-only`)."""
        command = self.dialect.estimate_command(request, JobLayout.of(request.workdir))
        if command is None:
            return None
        result = self.transport.run(command.argv, stdin=command.stdin, timeout=self.command_timeout)
        return self.dialect.parse_estimate(result)

    def find_by_tag(self, tag: str, workdir: str) -> str | None:
        """The id of a job named `tag` (queue first, then accounting), if one exists."""
        for argv in self.dialect.find_commands(tag):
            found = self.dialect.parse_find(self._run(argv), tag)
            if found is not None:
                return found
        return None

    # -- status ---------------------------------------------------------------------------

    def status(self, native_ids: Sequence[str], *,
               cancelled: Collection[str] = ()) -> Mapping[str, JobStatus]:
        """Status of many jobs: one queue query, then accounting for those it cannot settle.
        `cancelled`: the ids the gateway asked to cancel (see module)."""
        ids = list(dict.fromkeys(native_ids))
        if not ids:
            return {}
        found = self.dialect.parse_status(self._run(self.dialect.status_command(ids)), ids)
        unsettled = [
            i for i in ids
            if i not in found
            or (found[i].state.is_final and not self.dialect.status_reports_final)
        ]
        accounting_answered = True
        if unsettled:
            # Accounting is the authority on how a job ended.
            try:
                records = self.accounting(unsettled)
            except SiteUnavailable as exc:
                # The queue's own final word stands: the other jobs' news should not wait
                # for slurmdbd.
                accounting_answered = False
                log.warning("%s accounting unavailable, jobs %s stay unsettled: %s",
                            self.kind, ", ".join(unsettled), exc.message)
            else:
                # A record still PENDING or RUNNING (the queue already shows the end) is
                # no record of the end yet.
                settled = {i: r for i, r in records.items()
                           if r.state.is_final or i not in found}
                found.update(settled)
                self._await_records(found, [i for i in unsettled if i not in settled])
        for native_id in ids:
            status = found.get(native_id)
            if status is None:
                # Found nowhere, and accounting did answer: only a cancel explains that.
                if accounting_answered and native_id in cancelled:
                    found[native_id] = JobStatus(
                        native_id, NativeState.CANCELLED, "cancelled", VANISHED_AFTER_CANCEL
                    )
            elif _killed(status) and native_id in cancelled:
                found[native_id] = JobStatus(
                    native_id, NativeState.CANCELLED, status.raw_state,
                    because(Reason.CANCELLED, f"({status.reason})", " ")
                    if status.reason else Reason.CANCELLED,
                    status.exit_code, status.started_at, status.ended_at,
                )
        return {i: found[i] for i in ids if i in found}

    def _await_records(self, found: dict[str, JobStatus], without_record: Sequence[str]) -> None:
        """Hold back the queue's final word on jobs accounting has no record of yet."""
        now = self.monotonic()
        for native_id in list(self._awaiting_record):
            if native_id not in without_record and (
                    native_id in found
                    or now - self._awaiting_record[native_id] > 10 * self.record_grace):
                del self._awaiting_record[native_id]  # settled, or no longer asked about
        for native_id in without_record:
            status = found.get(native_id)
            if status is None:
                continue
            since = self._awaiting_record.setdefault(native_id, now)
            if now - since < self.record_grace:
                del found[native_id]
            else:
                del self._awaiting_record[native_id]
                log.warning("%s job %s: no accounting record %.0f s after the queue showed it "
                            "%s; its exit code is unknown", self.kind, native_id, now - since,
                            status.raw_state)

    def accounting(self, native_ids: Sequence[str]) -> Mapping[str, JobStatus]:
        """Final statuses from the scheduler's accounting; jobs without a record are left out."""
        ids = list(dict.fromkeys(native_ids))
        records: dict[str, JobStatus] = {}
        for argv in self.dialect.accounting_commands(ids):
            records.update(self.dialect.parse_accounting(self._run(argv)))
        return {i: records[i] for i in ids if i in records}

    def usage(self, native_ids: Sequence[str]) -> list[UsageRecord]:
        """The usage record of every ended run of these jobs, in the site's own words
        (adapters.usage); jobs without one are left out."""
        order = {native_id: at for at, native_id in enumerate(dict.fromkeys(native_ids))}
        records: dict[tuple[str, int], UsageRecord] = {}
        for argv in self.dialect.usage_commands(list(order)):
            for record in self.dialect.parse_usage(self._run(argv)):
                # Only what was asked: an answer may hold more (other jobs of a log file).
                if record.native_id in order:
                    records[record.key] = record
        return sorted(records.values(), key=lambda r: (order[r.native_id], r.run))

    # -- cancel ---------------------------------------------------------------------------

    def cancel(self, native_id: str) -> None:
        """Ask the scheduler to cancel; idempotent. Raises UnknownJob for an unknown id."""
        self.dialect.parse_cancel(self._run(self.dialect.cancel_command(native_id)), native_id)

    # -- output and queues ----------------------------------------------------------------

    def read_output(
        self, workdir: str, stream: OutputStream, offset: int, limit: int
    ) -> OutputChunk:
        """Up to `limit` bytes of the job's stdout or stderr from `offset`."""
        if stream not in ("stdout", "stderr"):
            raise AdapterError(f"unknown output stream {stream!r}")
        if offset < 0 or limit < 0:
            raise AdapterError("offset and limit must not be negative")
        if not workdir.startswith("/") or "/../" in f"{workdir}/":
            raise AdapterError(f"job directory {workdir!r} is not an absolute path")
        layout = JobLayout.of(workdir)
        path = layout.stdout if stream == "stdout" else layout.stderr
        data, size = self.transport.read_bytes(path, offset, limit)
        return OutputChunk(data, offset, size)

    def queues(self) -> list[QueueInfo]:
        """Partitions or queues, their limits and load."""
        return self.dialect.parse_queues(self._run(self.dialect.queues_command()))

    def qualities_of_service(self) -> list[str] | None:
        """The qualities of service the scheduler knows; None where it has none."""
        command = self.dialect.qos_command()
        return None if command is None else self.dialect.parse_qos(self._run(command))

    def queue_snapshot(self) -> QueueSnapshot:
        """Every pending and running job of the site and its cores: two commands (the job
        listing, then the cores), whatever the number of jobs. Taken at the clock's time
        just before the job listing was asked for."""
        taken_at = self.clock()
        jobs = self.dialect.parse_queue_jobs(self._run(self.dialect.queue_jobs_command()))
        cores = self.dialect.parse_cores(self._run(self.dialect.cores_command()))
        return QueueSnapshot(taken_at=taken_at, total_cores=cores.total, free_cores=cores.free,
                             queues=cores.queues, jobs=tuple(jobs))

    # -- helpers --------------------------------------------------------------------------

    def _run(self, argv: Sequence[str]) -> CommandResult:
        return self.transport.run(argv, timeout=self.command_timeout)

    def _mkdir(self, *paths: str) -> None:
        # -m applies to the directories this call creates; parents come from the site's
        # scratch root, which the site config owns.
        result = self._run(["mkdir", "-p", "-m", "700", "--", *paths])
        if result.exit_status != 0:
            raise SiteUnavailable(f"cannot create {' '.join(paths)} on the site: {message(result)}")


def _after_mkdir(workdir: str, control_dir: str, argv: Sequence[str]) -> tuple[str, ...]:
    """argv, run by `sh` once both directories exist (created 0700), else exit
    MKDIR_FAILED. Paths and words stay positional parameters, never shell code."""
    script = f'mkdir -p -m 700 -- "$1" "$2" || exit {MKDIR_FAILED}; shift 2; exec "$@"'
    return ("sh", "-c", script, "gridgate-submit", workdir, control_dir, *argv)


def _killed(status: JobStatus) -> bool:
    """Ended by a signal rather than by itself or by its time limit."""
    if status.state is not NativeState.FAILED or status.reason == Reason.TIMEOUT:
        return False
    return status.exit_code is None or status.exit_code >= _SIGNAL_EXIT
