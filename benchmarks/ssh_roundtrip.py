"""Command round trips: one pooled SshTransport vs fresh OpenSSH connections (prints JSON).

Runs N sequential `true` commands three ways against the same sshd in the same run:
- gridgate's SshTransport: one paramiko connection, a new channel per command;
- the OpenSSH client, a new connection per command (`ssh -o StrictHostKeyChecking=yes`
  with a known_hosts file): what a user's raw `ssh site cmd` costs;
- the OpenSSH client over a ControlMaster connection (a persistent-connection reference).

By default a private sshd is started on 127.0.0.1 (tests/ssh/sshd.py; needs root).

    .venv/bin/python benchmarks/ssh_roundtrip.py [--count 100]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from adapters.ssh import SshTarget, SshTransport  # noqa: E402
from tests.ssh.sshd import Sshd, start_sshd  # noqa: E402

# The pooled transport should cost at most this fraction of fresh OpenSSH connections.
TARGET_POOLED_OVER_FRESH_MAX = 0.5


def timed(count: int, one: Callable[[], None]) -> dict[str, Any]:
    samples = []
    started = time.perf_counter()
    for _ in range(count):
        t0 = time.perf_counter()
        one()
        samples.append(time.perf_counter() - t0)
    total = time.perf_counter() - started
    ordered = sorted(samples)
    return {
        "total_s": round(total, 4),
        "per_command_ms": {
            "median": round(statistics.median(samples) * 1000, 3),
            "p95": round(ordered[int(0.95 * (len(ordered) - 1))] * 1000, 3),
            "min": round(ordered[0] * 1000, 3),
            "max": round(ordered[-1] * 1000, 3),
        },
    }


def run_checked(argv: list[str]) -> None:
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def measure(server: Sshd, count: int) -> dict[str, Any]:
    target = SshTarget(host="127.0.0.1", port=server.port, user=server.user,
                       host_keys=(server.host_key_line,), key_path=str(server.client_key),
                       site="bench")
    transport = SshTransport(target)
    try:
        t0 = time.perf_counter()
        transport.run(["true"])  # connect + first command, reported apart
        first_ms = (time.perf_counter() - t0) * 1000

        def pooled() -> None:
            if transport.run(["true"]).exit_status != 0:
                raise RuntimeError("true failed")

        pooled_figures = timed(count, pooled)
        pooled_figures["first_command_with_connect_ms"] = round(first_ms, 3)
        pooled_figures["ssh_connections"] = transport.connects
    finally:
        transport.close()

    fresh_figures = timed(count, lambda: run_checked(server.ssh_argv("true")))

    control_dir = Path(tempfile.mkdtemp(prefix="gw-bench-cm-"))
    mux = ["ssh", *server.ssh_options(), "-o", f"ControlPath={control_dir / 'cm'}"]
    subprocess.run([*mux, "-o", "ControlMaster=yes", "-o", "ControlPersist=no", "-N", "-f",
                    server.destination], check=True, stdin=subprocess.DEVNULL)
    try:
        mux_figures = timed(count, lambda: run_checked([*mux, server.destination, "--", "true"]))
    finally:
        subprocess.run([*mux, "-O", "exit", server.destination], check=False,
                       stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(control_dir, ignore_errors=True)

    ratio = pooled_figures["total_s"] / fresh_figures["total_s"]
    return {
        "benchmark": "ssh_roundtrip",
        "commands": count,
        "command": "true",
        "cpu_count": os.cpu_count(),
        "gridgate_pooled_paramiko": pooled_figures,
        "openssh_fresh_connection_each": fresh_figures,
        "openssh_controlmaster": mux_figures,
        "ratios": {
            "pooled_over_fresh": round(ratio, 4),
            "fresh_over_pooled": round(1 / ratio, 2),
            "pooled_over_controlmaster": round(
                pooled_figures["total_s"] / mux_figures["total_s"], 4),
        },
        "targets": {"pooled_over_fresh_max": TARGET_POOLED_OVER_FRESH_MAX},
        "met": ratio <= TARGET_POOLED_OVER_FRESH_MAX,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100)
    args = parser.parse_args()
    server = start_sshd()
    try:
        print(json.dumps(measure(server, args.count), indent=2))
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
