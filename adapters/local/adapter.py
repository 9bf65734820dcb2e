"""The embedded site: jobs run on this machine, each under a detached runner.

A job is a directory (layout in adapters.local.files). The adapter only writes
files and starts `python -m adapters.local.runner WORKDIR`; the runner does the
rest and records the outcome on disk, so a gateway may die (even `kill -9`) and
a later one reads where every job stands.

Job directories and native ids: adapters.local.index. Each job runs in its own
sandbox when the site has one: adapters.local.sandbox. Starting and reaping runners:
`spawn`; where a job stands: `state`; cancelling: `stop`; reading output: `output`;
telling the worker the moment a runner exits: `watch`.

Linux only: process identity and job cleanup read /proc.
"""

from __future__ import annotations

import os
import pwd
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from adapters.base import (
    Capabilities,
    JobStatus,
    NativeState,
    OutputChunk,
    OutputStream,
    SubmitRequest,
)
from adapters.errors import AdapterError, SiteUnavailable, SubmitRejected, UnknownJob
from adapters.local.files import (
    JobFiles,
    load_record,
    make_private_dirs,
    write_atomic,
    write_json_atomic,
)
from adapters.local.index import JobIndex
from adapters.local.launch import LaunchConfig, build_plan
from adapters.local.output import read_output
from adapters.local.procs import ProcessId
from adapters.local.records import Claim, LaunchPlan, utcnow
from adapters.local.sandbox import SandboxConfig
from adapters.local.snapshot import local_snapshot
from adapters.local.spawn import reap_runners, spawn_runner
from adapters.local.state import job_status
from adapters.local.stop import cancel_job
from adapters.local.usage import job_usage
from adapters.local.watch import AVAILABLE as WATCHABLE
from adapters.local.watch import RunnerWatch
from adapters.reasons import Reason, because
from adapters.snapshot import QueueSnapshot
from adapters.transport import FileTransport, LocalTransport
from adapters.usage import UsageRecord

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


class LocalAdapter:
    """Runs jobs as process groups on this machine, below `jobs_root`."""

    kind = "local"
    # Processes on this host: no queue, no scheduler accounting, one job per submit; each
    # ended job's usage from its own records (adapters.local.usage); each runner's exit
    # told at once where the kernel has pidfds (adapters.local.watch).
    capabilities = Capabilities(usage=True, change_wakes=WATCHABLE)

    def __init__(
        self,
        jobs_root: Path,
        mpiexec: str | None,
        python: str = sys.executable,
        *,
        path: str = DEFAULT_PATH,
        lang: str = "C.UTF-8",
        home: str | None = None,
        kill_grace_seconds: float = 5.0,
        runner_start_timeout: float = 60.0,
        sandbox: SandboxConfig | None = None,
    ) -> None:
        """`mpiexec` starts `mpi.launcher: mpirun` jobs (None: no MPI here); `python` runs
        the runner; `path`, `lang` and `home` seed each job's clean environment; with a
        `sandbox` each job runs in its own (adapters.local.sandbox), HOME its directory."""
        self._root = Path(jobs_root).resolve()
        self._index = JobIndex(self._root)
        self._python = python
        self._runner_home = pwd.getpwuid(os.getuid()).pw_dir
        if home is None and sandbox is None:
            home = self._runner_home
        self._config = LaunchConfig(
            mpiexec=mpiexec,
            path=path,
            home=home,
            lang=lang,
            kill_grace_seconds=kill_grace_seconds,
            sandbox=sandbox,
            user=pwd.getpwuid(os.getuid()).pw_name,
            root=self._root,
        )
        self._runner_start_timeout = runner_start_timeout
        self._files = LocalTransport(label="the local site")
        self._runners = RunnerWatch()

    @property
    def jobs_root(self) -> Path:
        return self._root

    @property
    def sandbox(self) -> SandboxConfig | None:
        """How jobs are confined; None: they run unconfined as the gateway's account."""
        return self._config.sandbox

    @property
    def files(self) -> FileTransport:
        """Files on this machine, moved by coreutils and plain file I/O."""
        return self._files

    # -- submit -------------------------------------------------------------------

    def prepare(self, request: SubmitRequest) -> str:
        """Write the job directory and its request, without starting a runner.

        The first half of `submit`. Idempotent: if the directory already holds a
        request with this tag it is kept as it is (it may already be running).
        """
        workdir = self._index.workdir(request.workdir, SubmitRejected)
        native_id = self._index.native_id(workdir)
        files = JobFiles(workdir)
        plan = build_plan(request, native_id, workdir, files.script, self._config)
        try:
            self._root.mkdir(parents=True, exist_ok=True, mode=0o700)
            make_private_dirs(self._root, workdir)
            make_private_dirs(self._root, files.control)
            try:
                existing = load_record(files.request, LaunchPlan.from_json)
            except ValueError as exc:
                raise SubmitRejected(f"{files.request} is unreadable: {exc}") from exc
            if existing is not None:
                if existing.tag != request.tag:
                    raise SubmitRejected(
                        f"job directory {workdir} already belongs to job {existing.tag}"
                    )
                return native_id
            if request.script is not None:
                write_atomic(files.script, request.script.encode(), mode=0o700)
            self._index.link(native_id, workdir)
            # Written last: a request.json on disk means everything it needs is there too.
            write_json_atomic(
                files.request,
                plan.to_json(
                    submitted_at=utcnow().isoformat(),
                    resources=asdict(request.resources),
                    mpi=asdict(request.mpi),
                ),
            )
        except (OSError, ValueError) as exc:
            raise SiteUnavailable(f"cannot prepare job directory {workdir}: {exc}") from exc
        return native_id

    def submit(self, request: SubmitRequest) -> str:
        """Prepare the job directory and start a detached runner; returns at once.

        Idempotent, which is what makes gateway crashes harmless: a second submit
        of the same tag into the same directory only starts another runner if none
        has claimed the job yet, and the runners' exclusive claim lets just one run it.
        """
        native_id = self.prepare(request)
        files = JobFiles(self._index.workdir(request.workdir, SubmitRejected))
        if not files.claim.exists():
            pid = spawn_runner(files, python=self._python, path=self._config.path,
                               home=self._runner_home, lang=self._config.lang)
            if self._runners.active and (runner := ProcessId.of(pid)) is not None:
                self._runners.watch(runner)
        return native_id

    def find_by_tag(self, tag: str, workdir: str) -> str | None:
        """The native id of the job with `tag` in `workdir`, if a runner (or a cancel) owns it.

        Crash windows of a gateway in submit, and why only claimed jobs count:
        (a) died before request.json was written: nothing here, None, and the
            gateway's new submit starts from scratch;
        (b) died after request.json but before starting a runner: nothing will
            ever run it, so None, and the new submit (idempotent) starts the runner;
        (c) died after starting the runner: once it has claimed the job we return
            its id; if it has not claimed it yet we return None, the new submit
            starts a second runner, and the exclusive claim lets only one run.
        """
        files = JobFiles(self._index.workdir(workdir, AdapterError))
        try:
            plan = load_record(files.request, LaunchPlan.from_json)
        except (OSError, ValueError):
            return None
        if plan is None or plan.tag != tag or not files.claim.exists():
            return None
        return plan.native_id

    # -- status -------------------------------------------------------------------

    def status(self, native_ids: Sequence[str], *,
               cancelled: Collection[str] = ()) -> Mapping[str, JobStatus]:
        """Where each job stands; ids with no job directory are omitted. `cancelled` is
        not needed here: a cancel is a file in the job's own control directory, which
        the runner obeys and this reads."""
        reap_runners()
        result: dict[str, JobStatus] = {}
        for native_id in dict.fromkeys(native_ids):
            files = self.files_of(native_id)
            if files is None:
                continue
            try:
                status = job_status(native_id, files, self._runner_start_timeout)
            except (OSError, ValueError) as exc:
                why = because(Reason.UNREADABLE_STATE, exc)
                status = JobStatus(native_id, NativeState.UNKNOWN, "unreadable", why)
            if status is not None:
                result[native_id] = status
                if not status.state.is_final:
                    self._watch_runner(files)
        return result

    def on_change(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call `callback` when a runner of a job this adapter started or was asked about
        exits (its job has ended); returns the function that stops it."""
        return self._runners.on_change(callback)

    def _watch_runner(self, files: JobFiles) -> None:
        # A job still under way: its runner may be one another gateway started (before a
        # restart), so it is watched from here on too (once: the watch keeps a set).
        if not self._runners.active:
            return
        try:
            claim = load_record(files.claim, Claim.from_json)
        except (OSError, ValueError):
            return
        if claim is not None and claim.by == "runner":
            self._runners.watch(claim.owner)

    def queue_snapshot(self) -> QueueSnapshot:
        """This site's unfinished jobs and the cores this process may use, less the running
        jobs' (adapters.local.snapshot): one pass over the index, whatever the cycle."""
        reap_runners()
        return local_snapshot(self._index, datetime.now(UTC), len(os.sched_getaffinity(0)),
                              self._runner_start_timeout)

    def usage(self, native_ids: Sequence[str]) -> list[UsageRecord]:
        """The usage record of each of these jobs that has ended (adapters.local.usage)."""
        records = []
        for native_id in dict.fromkeys(native_ids):
            files = self.files_of(native_id)
            if files is None:
                continue
            try:
                record = job_usage(native_id, files)
            except (OSError, ValueError) as exc:
                raise SiteUnavailable(f"cannot read the records of job {native_id}: {exc}") \
                    from exc
            if record is not None:
                records.append(record)
        return records

    # -- cancel -------------------------------------------------------------------

    def cancel(self, native_id: str) -> None:
        """Stop the job: a marker for its runner, then SIGTERM to every process of it.

        The runner escalates to SIGKILL after the grace period and records
        CANCELLED. A job no runner has claimed yet is claimed here and recorded
        CANCELLED at once. Cancelling a finished job does nothing.
        """
        files = self.files_of(native_id)
        if files is None or not files.request.exists():
            raise UnknownJob(f"no local job {native_id}")
        cancel_job(files)

    def files_of(self, native_id: str) -> JobFiles | None:
        """The job directory behind a native id, or None if there is none."""
        return self._index.files_of(native_id)

    # -- output -------------------------------------------------------------------

    def read_output(
        self, workdir: str, stream: OutputStream, offset: int, limit: int
    ) -> OutputChunk:
        """Up to `limit` bytes of the job's stdout or stderr file from `offset`."""
        return read_output(lambda: JobFiles(self._index.workdir(workdir, AdapterError)),
                           workdir, stream, offset, limit)
