"""How long `gridgate --version`, `list` and `show` take, against `python -c pass` (prints JSON).

Starts a throwaway gateway (SQLite, API only, data in a temporary directory), logs in
with an automation client, submits a few jobs, then runs each command N times,
interleaved with the baseline (the same venv's `python -c pass`, which pays the same
interpreter and site start-up) so that a busy neighbour slows all of them alike.
`show` is given a job's first 8 characters, as `list` prints them (so it resolves the
prefix, then reads the job: two requests). Reports medians; the target is each command
under 0.3 s (issues 14 and 28).

    .venv/bin/python benchmarks/cli_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGET_SECONDS = 0.3
BIN = Path(sys.executable).parent
GRIDGATE = str(BIN / "gridgate")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds one command takes, start to exit (it must succeed), and the CPU seconds
    it used (user + system: what a busy machine's waits do not inflate)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdin=subprocess.DEVNULL,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def cpu_ticks() -> list[int]:
    """The machine's cumulative CPU ticks (user nice system idle iowait irq softirq steal)."""
    with open("/proc/stat") as fh:
        return [int(x) for x in fh.readline().split()[1:9]]


def start_gateway(work: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    log = (work / "gateway.log").open("wb")
    server = subprocess.Popen([GRIDGATE, "serve", "--no-worker", "--log-level", "warning"],
                              env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 120
    while subprocess.run([GRIDGATE, "health"], env=env, capture_output=True).returncode:
        if server.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the gateway did not start: " + (work / "gateway.log").read_text())
        time.sleep(0.25)
    return server


def log_in(work: Path, env: dict[str, str], jobs: int) -> list[str]:
    """Log in and submit `jobs` jobs; their ids."""
    created = json.loads(subprocess.run(
        [GRIDGATE, "admin", "client", "create", "bench", "--json"], env=env, check=True,
        capture_output=True).stdout)
    secret = work / "secret"
    secret.write_text(created["client_secret"] + "\n")
    subprocess.run([GRIDGATE, "login", "--client-id", created["client_id"],
                    "--client-secret-file", str(secret)], env=env, check=True,
                   capture_output=True)
    return [subprocess.run([GRIDGATE, "submit", "--name", f"bench-{n}", "--exe", "/bin/true",
                            "--site", "local", "--quiet"], env=env, check=True,
                           capture_output=True, text=True).stdout.strip()
            for n in range(jobs)]


def measure(runs: int, env: dict[str, str], job: str) -> dict[str, list[tuple[float, float]]]:
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "gridgate --version": [GRIDGATE, "--version"],
        "gridgate list": [GRIDGATE, "list"],
        "gridgate show": [GRIDGATE, "show", job[:8]],
    }
    for argv in commands.values():  # warm the page cache and the bytecode caches
        run(argv, env)
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            samples[name].append(run(argv, env))
    return samples


def summary(samples: dict[str, list[tuple[float, float]]], steal: float) -> dict[str, Any]:
    base = samples["python -c pass"]
    baseline = statistics.median(wall for wall, _ in base)
    baseline_cpu = statistics.median(cpu for _, cpu in base)
    out: dict[str, Any] = {"runs": len(base),
                           "baseline_python_c_pass_s": round(baseline, 4),
                           "baseline_cpu_s": round(baseline_cpu, 4),
                           "target_s": TARGET_SECONDS, "commands": {}}
    for name, values in samples.items():
        if name == "python -c pass":
            continue
        walls = [wall for wall, _ in values]
        median = statistics.median(walls)
        cpu = statistics.median(cpu for _, cpu in values)
        out["commands"][name] = {
            "median_s": round(median, 4), "min_s": round(min(walls), 4),
            "max_s": round(max(walls), 4), "over_baseline_s": round(median - baseline, 4),
            "ratio_to_baseline": round(median / baseline, 2),
            "median_cpu_s": round(cpu, 4), "cpu_over_baseline_s": round(cpu - baseline_cpu, 4),
            "met": median < TARGET_SECONDS}
    out["met"] = all(c["met"] for c in out["commands"].values())
    out["load_average_1m"] = os.getloadavg()[0]
    out["cpu_steal_percent"] = steal
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--jobs", type=int, default=10,
                        help="jobs in the listed table (at least 1)")
    args = parser.parse_args()
    if args.jobs < 1:
        parser.error("--jobs: at least 1 (`show` reads one of them)")
    work = Path(tempfile.mkdtemp(prefix="gridgate-cli-startup."))
    port = free_port()
    # Bytecode cached as in any installation (pip compiles on install): a
    # PYTHONDONTWRITEBYTECODE environment would time the compiler instead.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env = {**env, "GRIDGATE_DATA_DIR": str(work / "data"),
           "GRIDGATE_CONFIG_DIR": str(work / "config"), "GRIDGATE_HOST": "127.0.0.1",
           "GRIDGATE_PORT": str(port), "GRIDGATE_PUBLIC_URL": f"http://127.0.0.1:{port}",
           "GRIDGATE_URL": f"http://127.0.0.1:{port}", "COLUMNS": "80"}
    server = start_gateway(work, env)
    try:
        ids = log_in(work, env, args.jobs)
        before = cpu_ticks()
        samples = measure(args.runs, env, ids[0])
        after = cpu_ticks()
    finally:
        server.terminate()
        server.wait(timeout=30)
        shutil.rmtree(work, ignore_errors=True)
    delta = [b - a for a, b in zip(before, after, strict=True)]
    steal = round(100 * delta[7] / max(1, sum(delta)), 1)
    print(json.dumps(summary(samples, steal), indent=2))


if __name__ == "__main__":
    main()
