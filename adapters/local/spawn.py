"""Job runners: `python -m adapters.local.runner WORKDIR`, detached, reaped by pid."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path

from adapters.errors import SiteUnavailable
from adapters.local.files import JobFiles, write_json_atomic
from adapters.local.records import utcnow

# The directory holding the `adapters` package, so the runner imports this very code.
_CODE_ROOT = str(Path(__file__).resolve().parents[2])

# Runners this process started and has not reaped yet (any adapter instance reaps them).
_runner_pids: set[int] = set()
_runners_lock = threading.Lock()


class _DetachedProcess(subprocess.Popen[bytes]):
    """A runner: it is meant to outlive this object, and is reaped by pid."""

    def __del__(self) -> None:
        # Popen would warn "still running" and track it for reaping; we do that ourselves.
        pass


def spawn_runner(files: JobFiles, *, python: str, path: str, home: str, lang: str) -> int:
    """Start the job's runner in a session of its own, with a clean environment; record
    its pid in `files.spawned` and return it. SiteUnavailable if it cannot be started."""
    env = {"PATH": path, "HOME": home, "LANG": lang, "PYTHONPATH": _CODE_ROOT}
    reap_runners()
    try:
        log = os.open(files.runner_log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            # Own session: a signal to the gateway's process group never reaches it.
            proc = _DetachedProcess(
                [python, "-m", "adapters.local.runner", str(files.workdir)],
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
    return proc.pid


def reap_runners() -> None:
    """Collect runners that have exited: they are our children until we die."""
    with _runners_lock:
        for pid in list(_runner_pids):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                _runner_pids.discard(pid)
