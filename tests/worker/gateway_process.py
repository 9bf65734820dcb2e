"""Run the real gateway (or a lone worker) as a separate OS process, for crash tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class GatewayProcess:
    """`gridgate serve` (API + worker) or `gridgate worker` in a child process."""

    def __init__(self, env: dict[str, str], log_path: Path, *, worker_only: bool = False,
                 args: tuple[str, ...] = (), module: str = "gateway.cli.main") -> None:
        self.env = {**os.environ, **env}
        self.module = module  # what `python -m` runs: the CLI, or a benchmark's wrapper
        self.log_path = log_path
        self.worker_only = worker_only
        self.args = args
        self.port = int(env.get("GRIDGATE_PORT", "0"))
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, process_group: int | None = None) -> None:
        """Start it (in `process_group`: 0 makes a group of its own) and, if it serves,
        wait until it answers."""
        command = "worker" if self.worker_only else "serve"
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", self.module, command, *self.args], env=self.env,
                stdout=log, stderr=subprocess.STDOUT, process_group=process_group)
        if not self.worker_only:
            self.wait_healthy()

    def wait_healthy(self, deadline: float = 180) -> None:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise AssertionError(f"gateway exited: {self.log_path.read_text()[-3000:]}")
            try:
                if httpx.get(f"{self.url}/api/v1/health", timeout=10).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"gateway not healthy: {self.log_path.read_text()[-3000:]}")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class GatewayHost:
    """One gateway host's processes: the API (`gridgate serve` without its worker) and a
    `gridgate worker`, in a process group of their own, so that killing the group is the
    host dying."""

    def __init__(self, env: dict[str, str], log_dir: Path, name: str) -> None:
        self.name = name
        self.api = GatewayProcess({**env, "GRIDGATE_PORT": str(free_port()),
                                   "GRIDGATE_RUN_WORKER": "false"}, log_dir / f"{name}-api.log")
        self.worker = GatewayProcess(env, log_dir / f"{name}-worker.log", worker_only=True)

    @property
    def url(self) -> str:
        return self.api.url

    def start(self) -> None:
        self.api.start(process_group=0)
        assert self.api.proc is not None
        self.worker.start(process_group=self.api.proc.pid)

    def kill9(self) -> None:
        """Both processes at once, as a host that loses power."""
        assert self.api.proc is not None and self.worker.proc is not None
        os.killpg(self.api.proc.pid, signal.SIGKILL)
        self.api.proc.wait()
        self.worker.proc.wait()

    def stop(self) -> None:
        self.worker.stop()
        self.api.stop()
