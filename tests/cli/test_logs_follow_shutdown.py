"""Stopping the gateway while `gridgate logs -f` follows a running job (issue 14, item 11):
a real `gridgate serve` process (uvicorn, with its worker) started and stopped here by
SIGTERM. The server ends the stream cleanly and stops at once, logging no CancelledError
traceback; the client says the stream ended, why, and what to run when the gateway is
back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gateway.cli import errors
from tests.tcp_proxy import SwitchingProxy
from tests.waiting_jobs import let_all_go, waits
from tests.worker.gateway_process import GatewayProcess, free_port


def gridgate(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "gateway.cli.main", *args], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


def test_stopping_the_server_ends_a_followed_log_cleanly(tmp_path: Path) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    server_env = {"GRIDGATE_DATA_DIR": str(tmp_path / "data"), "GRIDGATE_PORT": str(port),
                  "GRIDGATE_HOST": "127.0.0.1", "GRIDGATE_PUBLIC_URL": url,
                  "GRIDGATE_WORKER_POLL_SECONDS": "0.2"}
    env = {**os.environ, **server_env, "GRIDGATE_URL": url,
           "GRIDGATE_CONFIG_DIR": str(tmp_path / "config")}
    server = GatewayProcess(server_env, tmp_path / "serve.log")
    server.start()
    try:
        created = json.loads(gridgate(env, "admin", "client", "create", "t", "--json"))
        (tmp_path / "secret").write_text(created["client_secret"] + "\n")
        gridgate(env, "login", "--client-id", created["client_id"], "--client-secret-file",
                 str(tmp_path / "secret"))
        # It keeps running until the test lets it go, after the server has stopped.
        job_id = gridgate(env, "submit", "-q", "--site", "local", "--exe", "sh", "--", "-c",
                          f"echo started; {waits()}").strip()
        follower = subprocess.Popen([sys.executable, "-m", "gateway.cli.main", "logs",
                                     job_id[:8], "-f"], env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        try:
            assert follower.stdout is not None
            assert follower.stdout.readline() == "started\n"  # following a running job
            server.stop()  # SIGTERM, as a service manager stops it
            _, stderr = follower.communicate(timeout=60)
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.wait()
    finally:
        server.stop()
        let_all_go(tmp_path / "data" / "jobs")
    log = (tmp_path / "serve.log").read_text()
    assert "CancelledError" not in log and "Traceback" not in log, log[-3000:]
    assert "timeout graceful shutdown exceeded" not in log
    assert follower.returncode == errors.UNREACHABLE, stderr
    assert stderr.startswith(f"error: The stdout stream of job {job_id} ended: the gateway "
                             "ended the stream before the job ended"), stderr
    assert "cannot be reached now (connection refused)" in stderr
    assert f"run `gridgate logs {job_id} -f` again once the gateway is back" in stderr
    assert "Traceback" not in stderr


def test_a_followed_log_resumes_when_the_gateway_is_back(tmp_path: Path) -> None:
    """Stopped while `logs -f` waits, with a gateway process back at its address: it goes
    on from the byte it had, and ends with the job, every line once. The process that takes
    over is started beforehand, behind a proxy the test switches (tests/tcp_proxy.py), so
    its start-up never races the follower's reconnect attempts."""
    first, second = free_port(), free_port()
    proxy = SwitchingProxy(first)
    data = tmp_path / "data"
    server_env = {"GRIDGATE_DATA_DIR": str(data), "GRIDGATE_HOST": "127.0.0.1",
                  "GRIDGATE_PUBLIC_URL": proxy.url, "GRIDGATE_WORKER_POLL_SECONDS": "0.2"}
    env = {**os.environ, **server_env, "GRIDGATE_URL": proxy.url,
           "GRIDGATE_CONFIG_DIR": str(tmp_path / "config")}
    server = GatewayProcess({**server_env, "GRIDGATE_PORT": str(first)}, tmp_path / "serve.log")
    # The API alone; a worker of its own starts once the first process has stopped.
    standby = GatewayProcess({**server_env, "GRIDGATE_PORT": str(second),
                              "GRIDGATE_RUN_WORKER": "false"}, tmp_path / "standby.log")
    worker = GatewayProcess(server_env, tmp_path / "worker.log", worker_only=True)
    server.start()
    try:
        standby.start()
        created = json.loads(gridgate(env, "admin", "client", "create", "t", "--json"))
        (tmp_path / "secret").write_text(created["client_secret"] + "\n")
        gridgate(env, "login", "--client-id", created["client_id"], "--client-secret-file",
                 str(tmp_path / "secret"))
        # The job goes on at its site while the first gateway stops, and prints "two" only
        # once the test lets it go, after that: the follower must have resumed.
        job_id = gridgate(env, "submit", "-q", "--site", "local", "--exe", "sh", "--", "-c",
                          f"echo one; {waits('echo two')}").strip()
        follower = subprocess.Popen([sys.executable, "-m", "gateway.cli.main", "logs",
                                     job_id, "-f"], env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        try:
            assert follower.stdout is not None
            assert follower.stdout.readline() == "one\n"
            proxy.switch(second)
            server.stop()  # SIGTERM: the stream ends; the follower reconnects, to `standby`
            worker.start()
            let_all_go(data / "jobs")
            stdout, stderr = follower.communicate(timeout=120)
        finally:
            if follower.poll() is None:
                follower.kill()
                follower.wait()
    finally:
        for process in (server, standby, worker):
            process.stop()
        proxy.close()
        let_all_go(data / "jobs")
    assert (follower.returncode, stdout) == (0, "two\n"), stderr
