"""The detached supervisor of one local job: `python -m adapters.local.runner WORKDIR`.

It outlives the gateway that started it (own session, no pipes to the gateway).
It claims the job exclusively, so however many runners a retried submit starts,
the program runs once; it starts the program as its own session and process
group, enforces the walltime, honours a cancel marker, kills whatever the job
left behind, and records the outcome in result.json for any later gateway.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import time
import traceback
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import Literal

from adapters.base import NativeState
from adapters.local.files import JobFiles, read_json, write_json_atomic
from adapters.local.network import Outbound
from adapters.local.ownership import claim_job, record_outcome
from adapters.local.procs import (
    ProcessId,
    become_subreaper,
    die_with_parent,
    job_processes,
    sandbox_launchers,
    signal_processes,
)
from adapters.local.records import ChildRecord, LaunchPlan, Outcome, utcnow
from adapters.local.sandbox import hand_over, sandbox_argv, wait_status_of
from adapters.reasons import Reason, StatusReason, because

# How often the runner looks for a cancel marker while the program runs.
POLL_SECONDS = 0.5
# After SIGKILL, how long to wait for processes to disappear before giving up on them.
KILL_WAIT_SECONDS = 10.0
# Exit codes a shell uses when it cannot run a program.
NOT_FOUND_EXIT, NOT_EXECUTABLE_EXIT = 127, 126

StopCause = Literal["cancel", "timeout", "signal"]


def exit_code_of(wait_status: int) -> int:
    """The shell's convention: the exit status, or 128 + signal number."""
    if os.WIFSIGNALED(wait_status):
        return 128 + os.WTERMSIG(wait_status)
    return os.WEXITSTATUS(wait_status)


def classify(
    cause: StopCause | None, wait_status: int, runner_signal: int | None = None
) -> tuple[NativeState, str, StatusReason | None]:
    """State, raw state and reason of a job whose program ended with `wait_status`."""
    if cause == "cancel":
        return NativeState.CANCELLED, "cancelled", Reason.CANCEL_REQUESTED
    if cause == "timeout":
        return NativeState.FAILED, "timeout", Reason.TIMEOUT
    if cause == "signal":
        why = because(Reason.RUNNER_GOT_SIGNAL, f"{runner_signal}; job stopped", " ")
        return NativeState.FAILED, "terminated", why
    if exit_code_of(wait_status) == 0:
        return NativeState.COMPLETED, "exited", None
    raw = "signaled" if os.WIFSIGNALED(wait_status) else "exited"
    return NativeState.FAILED, raw, Reason.NON_ZERO_EXIT


def _log(message: str) -> None:
    print(f"{utcnow().isoformat()} runner[{os.getpid()}]: {message}", file=sys.stderr, flush=True)


class Supervisor:
    """Runs one claimed job to its recorded outcome."""

    def __init__(self, files: JobFiles) -> None:
        self.files = files
        self.child: ProcessId | None = None
        self.child_status: int | None = None
        self.started_mono: float | None = None
        self.signalled: int | None = None
        self.sandboxed = False
        # The sandbox's outbound network, when the plan asks for one.
        self.outbound: Outbound | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    def run(self) -> int:
        try:
            plan = LaunchPlan.from_json(read_json(self.files.request) or {})
        except (OSError, ValueError) as exc:
            self._finish(NativeState.FAILED, "invalid-request", None,
                         because(Reason.BAD_JOB_REQUEST, exc))
            return 1
        if self.files.cancel.exists():
            self._finish(NativeState.CANCELLED, "cancelled", None, Reason.CANCELLED_BEFORE_START)
            return 0
        try:
            become_subreaper()
        except OSError as exc:  # still works, but orphans of the program may escape
            _log(f"cannot become a child subreaper: {exc}")
        self._install_signal_handlers()
        started_at = utcnow()
        try:
            out, err = self._open_output("stdout"), self._open_output("stderr")
        except OSError as exc:
            why = because(Reason.CANNOT_OPEN_OUTPUT, exc)
            self._finish(NativeState.FAILED, "launch-failed", None, why, started_at)
            return 0
        try:
            argv = self._argv(plan)
        except OSError as exc:
            os.close(out)
            os.close(err)
            why = because(Reason.CANNOT_PREPARE_SANDBOX, exc)
            self._finish(NativeState.FAILED, "launch-failed", None, why, started_at)
            return 0
        try:
            self.child = self._start(argv, plan, out, err)
        except OSError as exc:
            self._stop_network()
            code = NOT_FOUND_EXIT if isinstance(exc, FileNotFoundError) else NOT_EXECUTABLE_EXIT
            why = because(Reason.LAUNCH_FAILED,
                          f"cannot execute {plan.argv[0]!r}: {exc.strerror or exc}")
            self._finish(NativeState.FAILED, "launch-failed", code, why, started_at)
            return 0
        write_json_atomic(self.files.child, ChildRecord(self.child, started_at).to_json())
        try:
            if self.outbound is not None:
                self.outbound.attach(sys.stderr.fileno())
        except OSError as exc:
            # Killed first: bwrap takes the end of its block pipe, closed by stopping the
            # network, as leave to start the program.
            signal_processes(job_processes(self.child, os.getpid()), signal.SIGKILL)
            self._reap_all(time.monotonic() + KILL_WAIT_SECONDS)
            self._stop_network()
            why = because(Reason.CANNOT_PREPARE_SANDBOX, f"network: {exc}")
            self._finish(NativeState.FAILED, "launch-failed", None, why, started_at)
            return 0
        cause = self._supervise(plan)
        ended_at = utcnow()
        self._stop_network()
        self._end_leftovers(plan.kill_grace_seconds)
        assert self.child_status is not None
        status = wait_status_of(self.child_status) if self.sandboxed else self.child_status
        code = exit_code_of(status)
        if cause is None and self.files.cancel.exists():
            cause = "cancel"  # it ended while a cancel was on its way: the user asked for this
        state, raw, reason = classify(cause, status, self.signalled)
        self._finish(state, raw, code, reason, started_at, ended_at)
        return 0

    def abort(self, reason: StatusReason) -> None:
        """After an internal error: stop the job and record why, if nothing was recorded."""
        with contextlib.suppress(Exception):
            if self.child is not None:
                signal_processes(job_processes(self.child, os.getpid()), signal.SIGKILL)
            self._stop_network()
            if not self.files.result.exists():
                self._finish(NativeState.FAILED, "runner-error", None, reason)

    def _argv(self, plan: LaunchPlan) -> list[str]:
        """The command to start: the plan's, inside its sandbox if it has one.

        Files are handed over only now, after staging has put the inputs in place.
        """
        if plan.sandbox is None:
            return list(plan.argv)
        self.sandboxed = True
        script = self.files.script if self.files.script.exists() else None
        shared = hand_over(plan.sandbox, self.files.workdir, script)
        # exec through sh: a program that cannot be run exits 127/126 as in a shell.
        # sh exports PWD; the job's environment stays exactly the plan's.
        shim = 'exec "$@"' if "PWD" in plan.env else 'unset PWD; exec "$@"'
        program = ["/bin/sh", "-c", shim, "gridgate-job", *plan.argv]
        self.outbound = plan.sandbox.outbound()
        return sandbox_argv(plan.sandbox, self.files.workdir, program, script=script,
                            shared_files=shared, reads=plan.reads, outbound=self.outbound)

    def _stop_network(self) -> None:
        if self.outbound is not None:
            self.outbound.stop()

    def _start(self, argv: list[str], plan: LaunchPlan, out: int, err: int) -> ProcessId:
        """Start `argv` on the given output fds (closed here)."""
        runner_pid = os.getpid()

        def in_child() -> None:
            # If the runner dies, nobody would enforce the walltime: take the program along.
            die_with_parent(signal.SIGKILL)
            if os.getppid() != runner_pid:
                os._exit(NOT_EXECUTABLE_EXIT)

        try:
            proc = subprocess.Popen(
                argv,
                cwd=self.files.workdir,
                env=dict(plan.env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                close_fds=True,
                pass_fds=self.outbound.pass_fds if self.outbound is not None else (),
                start_new_session=True,
                # preexec_fn is only unsafe with threads; the runner has one.
                preexec_fn=in_child,
            )
        finally:
            os.close(out)
            os.close(err)
        # The runner reaps its children itself (it is a subreaper for the whole tree);
        # tell Popen not to, so it neither waits nor warns.
        proc.returncode = 0
        self.started_mono = time.monotonic()
        child = ProcessId.of(proc.pid)
        return child if child is not None else ProcessId(proc.pid, -1)

    def _open_output(self, stream: Literal["stdout", "stderr"]) -> int:
        flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
        return os.open(self.files.output(stream), flags, 0o600)

    def _supervise(self, plan: LaunchPlan) -> StopCause | None:
        """Wait for the program; stop it on cancel, walltime or our own termination."""
        assert self.started_mono is not None and self.child is not None
        deadline = self.started_mono + plan.walltime_seconds
        cause: StopCause | None = None
        kill_at: float | None = None
        while True:
            self._reap()
            if self.child_status is not None:
                return cause
            now = time.monotonic()
            if cause is None:
                if self.files.cancel.exists():
                    cause = "cancel"
                elif self.signalled is not None:
                    cause = "signal"
                elif now >= deadline:
                    cause = "timeout"
                if cause is not None:
                    _log(f"stopping the job ({cause})")
                    self._signal_job(signal.SIGTERM)
                    kill_at = now + plan.kill_grace_seconds
            elif kill_at is not None and now >= kill_at:
                self._signal_job(signal.SIGKILL)
                kill_at = now + 1.0  # again, for anything started meanwhile
            timeout = POLL_SECONDS
            if cause is None:
                timeout = min(timeout, deadline - now)
            if kill_at is not None:
                timeout = min(timeout, kill_at - now)
            self._sleep(max(timeout, 0.0))

    def _end_leftovers(self, grace: float) -> None:
        """Whatever the program left running dies with the job: TERM, grace, then KILL.

        Then every child is reaped: an orphan left as a zombie would outlive us
        under an init that may never reap it.
        """
        if job_processes(self.child, os.getpid()):
            self._signal_job(signal.SIGTERM)
            sig_deadline = time.monotonic() + grace
            give_up = sig_deadline + KILL_WAIT_SECONDS
            while time.monotonic() < give_up:
                self._sleep(0.1)
                self._reap()
                remaining = job_processes(self.child, os.getpid())
                if not remaining:
                    break
                if time.monotonic() >= sig_deadline:
                    signal_processes(remaining, signal.SIGKILL)
            else:
                _log(f"still alive after SIGKILL: {job_processes(self.child, os.getpid())}")
        self._reap_all(time.monotonic() + KILL_WAIT_SECONDS)

    def _reap_all(self, deadline: float) -> None:
        """Reap children until none is left (the rest are exiting), or until `deadline`."""
        while True:
            self._reap()
            try:
                # WNOWAIT: only ask whether any child is left; _reap collects it.
                os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                return
            if time.monotonic() >= deadline:
                return
            self._sleep(0.05)

    def _signal_job(self, sig: signal.Signals) -> None:
        pids = set(job_processes(self.child, os.getpid()))
        if self.sandboxed and sig != signal.SIGKILL:
            pids -= sandbox_launchers(self.child)
        signal_processes(sorted(pids), sig)

    def _reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            if self.child is not None and pid == self.child.pid:
                self.child_status = status

    def _install_signal_handlers(self) -> None:
        def on_stop(signum: int, _frame: FrameType | None) -> None:
            self.signalled = signum

        # Wake the select() in _sleep on every signal, including SIGCHLD.
        signal.set_wakeup_fd(self._wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda _s, _f: None)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, on_stop)

    def _sleep(self, seconds: float) -> None:
        readable, _, _ = select.select([self._wake_r], [], [], seconds)
        if readable:
            with contextlib.suppress(BlockingIOError):
                while os.read(self._wake_r, 512):
                    pass

    def _finish(
        self,
        state: NativeState,
        raw_state: str,
        exit_code: int | None,
        reason: StatusReason | None,
        started_at: datetime | None = None,
        ended_at: datetime | None = None,
    ) -> None:
        outcome = Outcome(state, raw_state, exit_code, reason, started_at, ended_at or utcnow())
        record_outcome(self.files, outcome)
        _log(f"outcome {state.value} ({raw_state}, exit {exit_code}, reason {reason})")


def main(argv: list[str] | None = None) -> int:
    """Supervise the job in WORKDIR unless another runner already owns it."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m adapters.local.runner WORKDIR", file=sys.stderr)
        return 2
    files = JobFiles(Path(args[0]))
    if not claim_job(files, "runner"):
        _log("the job is already claimed; nothing to do")
        return 0
    supervisor = Supervisor(files)
    try:
        return supervisor.run()
    except Exception as exc:
        traceback.print_exc()
        supervisor.abort(because(Reason.RUNNER_ERROR, exc))
        return 1


if __name__ == "__main__":
    sys.exit(main())
