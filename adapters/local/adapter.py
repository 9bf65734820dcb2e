"""The embedded site: jobs run on this machine, each under a detached runner.

A job is a directory (layout in adapters.local.files). The adapter only writes
files and starts `python -m adapters.local.runner WORKDIR`; the runner does the
rest and records the outcome on disk, so a gateway may die (even `kill -9`) and
a later one reads where every job stands.

Job directories and native ids: adapters.local.index. Each job runs in its own
sandbox when the site has one: adapters.local.sandbox.

Linux only: process identity and job cleanup read /proc.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from adapters.base import JobStatus, NativeState, OutputChunk, OutputStream, SubmitRequest
from adapters.errors import AdapterError, SiteUnavailable, SubmitRejected, UnknownJob
from adapters.local.files import (
    JobFiles,
    make_private_dirs,
    read_json,
    write_atomic,
    write_json_atomic,
)
from adapters.local.index import JobIndex
from adapters.local.launch import LaunchConfig, build_plan
from adapters.local.ownership import claim_job, record_outcome
from adapters.local.procs import job_processes, sandbox_launchers, signal_processes
from adapters.local.records import ChildRecord, Claim, LaunchPlan, Outcome, utcnow
from adapters.local.sandbox import SandboxConfig
from adapters.reasons import Reason, because
from adapters.transport import FileTransport, LocalTransport

DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
RUNNER_VANISHED = "runner process disappeared without recording an outcome"
LOST_REASON = because(Reason.LOST, RUNNER_VANISHED)
# The directory holding the `adapters` package, so the runner imports this very code.
_CODE_ROOT = str(Path(__file__).resolve().parents[2])

T = TypeVar("T")

# Runners this process started and has not reaped yet (any adapter instance reaps them).
_runner_pids: set[int] = set()
_runners_lock = threading.Lock()


class _DetachedProcess(subprocess.Popen[bytes]):
    """A runner: it is meant to outlive this object, and is reaped by pid."""

    def __del__(self) -> None:
        # Popen would warn "still running" and track it for reaping; we do that ourselves.
        pass


class LocalAdapter:
    """Runs jobs as process groups on this machine, below `jobs_root`."""

    kind = "local"

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
        )
        self._runner_start_timeout = runner_start_timeout
        self._files = LocalTransport(label="the local site")

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
                existing = _load(files.request, LaunchPlan.from_json)
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
            self._spawn_runner(files)
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
            plan = _load(files.request, LaunchPlan.from_json)
        except (OSError, ValueError):
            return None
        if plan is None or plan.tag != tag or not files.claim.exists():
            return None
        return plan.native_id

    def _spawn_runner(self, files: JobFiles) -> None:
        env = {
            "PATH": self._config.path,
            "HOME": self._runner_home,
            "LANG": self._config.lang,
            "PYTHONPATH": _CODE_ROOT,
        }
        self._reap_runners()
        try:
            log = os.open(files.runner_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                # Own session: a signal to the gateway's process group never reaches it.
                proc = _DetachedProcess(
                    [self._python, "-m", "adapters.local.runner", str(files.workdir)],
                    cwd="/",
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=log,
                    close_fds=True,
                    start_new_session=True,
                )
            finally:
                os.close(log)
            write_json_atomic(files.spawned, {"pid": proc.pid, "at": utcnow().isoformat()})
        except OSError as exc:
            raise SiteUnavailable(f"cannot start the local job runner: {exc}") from exc
        with _runners_lock:
            _runner_pids.add(proc.pid)

    def _reap_runners(self) -> None:
        """Collect runners that have exited: they are our children until we die."""
        with _runners_lock:
            for pid in list(_runner_pids):
                try:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    done = pid
                if done:
                    _runner_pids.discard(pid)

    # -- status -------------------------------------------------------------------

    def status(self, native_ids: Sequence[str]) -> Mapping[str, JobStatus]:
        """Where each job stands; ids with no job directory are omitted."""
        self._reap_runners()
        result: dict[str, JobStatus] = {}
        for native_id in dict.fromkeys(native_ids):
            files = self.files_of(native_id)
            if files is None:
                continue
            try:
                status = self._status_of(native_id, files)
            except (OSError, ValueError) as exc:
                why = because(Reason.UNREADABLE_STATE, exc)
                status = JobStatus(native_id, NativeState.UNKNOWN, "unreadable", why)
            if status is not None:
                result[native_id] = status
        return result

    def _status_of(self, native_id: str, files: JobFiles) -> JobStatus | None:
        outcome = _load(files.result, Outcome.from_json)
        if outcome is not None:
            return _final_status(native_id, outcome)
        if not files.request.exists():
            return None
        claim = _load(files.claim, Claim.from_json)
        if claim is None:
            if not self._runner_overdue(files):
                return JobStatus(native_id, NativeState.QUEUED, "pending")
            # The runner we started never claimed the job. Claim it ourselves, so a late
            # runner cannot start it, and say why it failed.
            if claim_job(files, "adapter"):
                reason = because(
                    Reason.LOST, f"the job runner did not start within "
                    f"{self._runner_start_timeout:g} s; see {files.runner_log}"
                )
                outcome = Outcome(NativeState.FAILED, "lost", None, reason, None, utcnow())
                record_outcome(files, outcome)
                return _final_status(native_id, outcome)
            claim = _load(files.claim, Claim.from_json)
            if claim is None:
                return JobStatus(native_id, NativeState.QUEUED, "pending")
        child = _load(files.child, ChildRecord.from_json)
        if claim.owner.is_alive():
            if child is None:
                return JobStatus(native_id, NativeState.QUEUED, "starting")
            return JobStatus(native_id, NativeState.RUNNING, "running", started_at=child.started_at)
        # The owner is gone. It may have recorded the outcome just before exiting.
        outcome = _load(files.result, Outcome.from_json)
        if outcome is None:
            outcome = self._record_lost(files, child)
        return _final_status(native_id, outcome)

    def _record_lost(self, files: JobFiles, child: ChildRecord | None) -> Outcome:
        """The runner died without an outcome: stop what it left and record that."""
        if child is not None:
            signal_processes(job_processes(child.process, None), signal.SIGKILL)
        started = child.started_at if child else None
        if files.cancel.exists():
            reason = because(Reason.CANCEL_REQUESTED, RUNNER_VANISHED, "; ")
            outcome = Outcome(NativeState.CANCELLED, "cancelled", None, reason, started, utcnow())
        else:
            outcome = Outcome(NativeState.FAILED, "lost", None, LOST_REASON, started, utcnow())
        # Nobody else can write it any more: the claim's holder is dead.
        record_outcome(files, outcome)
        return outcome

    def _runner_overdue(self, files: JobFiles) -> bool:
        try:
            spawned_at = files.spawned.stat().st_mtime
        except FileNotFoundError:
            return False  # no runner was ever started: a recovering gateway will submit again
        return time.time() - spawned_at > self._runner_start_timeout

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
        if files.result.exists():
            return
        write_atomic(files.cancel, f"cancel requested at {utcnow().isoformat()}\n".encode())
        if claim_job(files, "cancel"):
            reason = Reason.CANCELLED_BEFORE_START
            outcome = Outcome(NativeState.CANCELLED, "cancelled", None, reason, None, utcnow())
            record_outcome(files, outcome)
            return
        claim = _load(files.claim, Claim.from_json)
        child = _load(files.child, ChildRecord.from_json)
        if child is None:
            return  # the runner sees the marker before it starts the program
        runner_alive = claim is not None and claim.owner.is_alive()
        ancestor = claim.owner.pid if claim is not None and runner_alive else None
        # Without a runner nobody would escalate later, so kill outright.
        sig = signal.SIGTERM if runner_alive else signal.SIGKILL
        pids = set(job_processes(child.process, ancestor))
        plan = _load(files.request, LaunchPlan.from_json)
        if sig == signal.SIGTERM and plan is not None and plan.sandbox is not None:
            pids -= sandbox_launchers(child.process)
        signal_processes(sorted(pids), sig)

    def files_of(self, native_id: str) -> JobFiles | None:
        """The job directory behind a native id, or None if there is none."""
        return self._index.files_of(native_id)

    # -- output -------------------------------------------------------------------

    def read_output(
        self, workdir: str, stream: OutputStream, offset: int, limit: int
    ) -> OutputChunk:
        """Up to `limit` bytes of the job's stdout or stderr file from `offset`."""
        if stream not in ("stdout", "stderr"):
            raise AdapterError(f"unknown output stream {stream!r}")
        if offset < 0 or limit < 0:
            raise AdapterError("offset and limit must not be negative")
        path = JobFiles(self._index.workdir(workdir, AdapterError)).output(stream)
        try:
            # The job may replace its output with a symlink; never follow it.
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            return OutputChunk(b"", offset, None)
        except OSError as exc:
            raise AdapterError(f"cannot read {stream} of {workdir}: {exc}") from exc
        with os.fdopen(fd, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if offset >= size:
                # Nothing there yet; seeking past the file system's largest offset fails.
                return OutputChunk(b"", offset, size)
            f.seek(offset)
            data = f.read(limit)
        # The file may have grown since fstat; never report less than was read.
        return OutputChunk(data, offset, max(size, offset + len(data)) if data else size)


def _load(path: Path, parse: Callable[[Mapping[str, Any]], T]) -> T | None:
    data = read_json(path)
    return None if data is None else parse(data)


def _final_status(native_id: str, outcome: Outcome) -> JobStatus:
    return JobStatus(
        native_id=native_id,
        state=outcome.state,
        raw_state=outcome.raw_state,
        reason=outcome.reason,
        exit_code=outcome.exit_code,
        started_at=outcome.started_at,
        ended_at=outcome.ended_at,
    )
