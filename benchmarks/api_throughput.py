"""API throughput on PostgreSQL with the worker paused (prints JSON; not a test).

Measures accepted submissions per second and GET /api/v1/jobs/{id} requests per
second with p50/p99 latency at 1, 16 and 64 concurrent clients, each beside the
same server's /api/v1/health measured in the same run. Load comes from `wrk`
(installed from apt when missing) so the client costs little CPU on a 2-core box.

Each series also records where a slow request could have waited: the kernel's TCP
counters (listen-queue overflows and drops, SYN and other retransmissions), the longest
accept queue of the gateway's listening sockets, how late a 10 ms sleep of this process
woke (the whole host stalling), and the round trip of `SELECT 1` on a connection of its
own (the database stalling).

    .venv/bin/python benchmarks/api_throughput.py [--seconds 5] [--processes 2] [--api-threads 4]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import psycopg  # noqa: E402
from sqlalchemy import func, select  # noqa: E402
from sqlalchemy.engine import make_url  # noqa: E402

from benchmarks.bench_gateway import postgres_gateway  # noqa: E402
from gateway.db.models import Job  # noqa: E402

CONCURRENCY = (1, 16, 64)
# p99 of GET job and /health, by number of clients
P99_MS_MAX = {"16": 25, "64": 100}
TARGETS: dict[str, Any] = {"submit_per_s_min": 300, "get_vs_health_min": 0.5,
                           "p99_ms_max": P99_MS_MAX}
SPEC = {"name": "bench", "executable": "/bin/true", "labels": {"bench": "api"}}


def cpu_times() -> list[int]:
    """The machine's cumulative CPU ticks (user nice system idle iowait irq softirq steal)."""
    with open("/proc/stat", encoding="ascii") as stat:
        return [int(v) for v in stat.readline().split()[1:9]]


# Kernel TCP counters (nstat's TcpExt*/Tcp*) show where connections wait: an overflowing
# accept queue (TcpExtListenOverflows) drops the handshake's last ACK, and any drop is
# retransmitted after an RTO (1 s before the first RTT sample, 200 ms after), which
# reads as a ~1 s request at a median of a few ms.
LISTEN_COUNTERS = ("TcpExtListenOverflows", "TcpExtListenDrops", "TcpExtTCPReqQFullDrop",
                   "TcpExtTCPReqQFullDoCookies", "TcpExtTCPSynRetrans")


def tcp_counters() -> dict[str, int]:
    """Every Tcp/TcpExt counter of this network namespace (all its sockets, others' too)."""
    found: dict[str, int] = {}
    for table in ("/proc/net/netstat", "/proc/net/snmp"):
        with open(table, encoding="ascii") as f:
            lines = f.read().splitlines()
        for names, values in zip(lines[::2], lines[1::2], strict=True):
            prefix, _, header = names.partition(":")
            if prefix in ("Tcp", "TcpExt"):
                for name, value in zip(header.split(), values.split(":")[1].split(),
                                       strict=True):
                    found[f"{prefix}{name}"] = int(value)
    return found


def accept_queues(port: int) -> list[int]:
    """Connections waiting in each listening socket on `port` for accept() (Recv-Q)."""
    queues = []
    with open("/proc/net/tcp", encoding="ascii") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            # State 0A is LISTEN; for a listener rx_queue is its accept-queue length.
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                queues.append(int(fields[4].split(":")[1], 16))
    return queues


class Watch:
    """While a series runs, every 10 ms: the longest accept queue on `port`, how late a
    10 ms sleep of this process wakes (the host stalling everyone), and the round trip
    of `SELECT 1` on a connection of its own (the database stalling)."""

    def __init__(self, port: int, db_url: str) -> None:
        self.port, self.db_url = port, db_url
        self.accept_queue_max, self.host_stall_ms, self.db_ms = 0, 0.0, [0.0]
        self.db_waits: dict[str, int] = {}
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._host, daemon=True),
                         threading.Thread(target=self._db, daemon=True),
                         threading.Thread(target=self._waits, daemon=True)]

    def _host(self) -> None:
        while True:
            before = time.perf_counter()
            if self._stop.wait(0.01):
                return
            late = (time.perf_counter() - before - 0.01) * 1000
            self.host_stall_ms = max(self.host_stall_ms, late)
            self.accept_queue_max = max([self.accept_queue_max, *accept_queues(self.port)])

    def _db(self) -> None:
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            while not self._stop.wait(0.01):
                before = time.perf_counter()
                conn.execute("SELECT 1")
                self.db_ms.append((time.perf_counter() - before) * 1000)

    def _waits(self) -> None:
        # What the database's active sessions wait on, sampled every 20 ms: a backend
        # preempted while holding a spinlock makes the others back off in sleeps that
        # grow to 1 s (wait event Timeout:SpinDelay).
        with psycopg.connect(self.db_url, autocommit=True) as conn:
            while not self._stop.wait(0.02):
                for (event,) in conn.execute(
                        "SELECT wait_event_type || ':' || wait_event FROM pg_stat_activity"
                        " WHERE state = 'active' AND wait_event IS NOT NULL"
                        " AND pid <> pg_backend_pid()"):
                    self.db_waits[event] = self.db_waits.get(event, 0) + 1

    def __enter__(self) -> Watch:
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join()

    def summary(self) -> dict[str, float]:
        ordered = sorted(self.db_ms)
        return {"accept_queue_max": self.accept_queue_max,
                "host_stall_max_ms": round(self.host_stall_ms, 1),
                "db_select1_p99_ms": round(ordered[int(0.99 * (len(ordered) - 1))], 2),
                "db_select1_max_ms": round(ordered[-1], 2),
                "db_wait_samples": dict(sorted(self.db_waits.items()))}


def measured(run: Any, port: int, db_url: str) -> dict[str, Any]:
    """`run()`'s result with the TCP counters' change and what the Watch saw."""
    before = tcp_counters()
    with Watch(port, db_url) as watch:
        result: dict[str, Any] = run()
    after = tcp_counters()
    # Only what moved; the listen-path counters always, to show them at zero.
    result["tcp"] = {name: after[name] - before[name] for name in before
                     if after[name] != before[name] or name in LISTEN_COUNTERS}
    result.update(watch.summary())
    return result


CPU_CGROUP_V1 = Path("/sys/fs/cgroup/cpu")


@contextlib.contextmanager
def own_cpu_group() -> Iterator[str | None]:
    """Run this process and everything it starts (PostgreSQL, the gateway, wrk) in a CPU
    cgroup of its own, as a service manager runs a service; None where there is none.

    Why: PostgreSQL calls setsid() in every backend, and with the kernel's autogroup
    (kernel.sched_autogroup_enabled=1, Debian's default) every session in the root
    cgroup is a scheduling group of its own, weighted like the whole gateway. A backend
    that wakes on the other core finds its group's share there near zero (the share
    follows each group's recent load per core) and waits behind the gateway's group:
    `SELECT 1` took 0.3-0.7 s at a p50 of 3 ms. Inside a cgroup autogroup does not apply.
    """
    if os.geteuid() != 0 or not (CPU_CGROUP_V1 / "tasks").exists():
        yield None
        return
    group = CPU_CGROUP_V1 / f"gridgate-bench-{os.getpid()}"
    group.mkdir()
    try:
        (group / "tasks").write_text(str(os.getpid()))
        yield str(group)
    finally:
        # Back to the root group; the group can be removed once nothing is left in it.
        (CPU_CGROUP_V1 / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(50):
            try:
                group.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def sysctl(name: str) -> int:
    return int(Path("/proc/sys", *name.split(".")).read_text())


def ensure_wrk() -> str:
    path = shutil.which("wrk")
    if path:
        return path
    subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", "wrk"], check=True,
                   stdout=subprocess.DEVNULL)
    return shutil.which("wrk") or "wrk"


def wrk(binary: str, url: str, clients: int, seconds: float, *, method: str = "GET",
        body: str = "", token: str = "", tokens: tuple[str, ...] = ()) -> dict[str, Any]:
    """`tokens`: one per request in turn (many users) instead of `token`."""
    env = {**os.environ, "WRK_METHOD": method, "WRK_BODY": body, "WRK_TOKEN": token,
           "WRK_TOKENS": ",".join(tokens)}
    out = subprocess.run(
        [binary, "-t", str(min(clients, 2)), "-c", str(clients), "-d", f"{max(1, round(seconds))}s",
         "--timeout", "10s", "-s", str(ROOT / "benchmarks" / "request.lua"), url],
        env=env, capture_output=True, text=True, check=True).stdout
    summary: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    secs = summary["duration_us"] / 1e6
    return {
        "requests": summary["requests"],
        "per_s": round(summary["requests"] / secs, 1),
        "p50_ms": round(summary["p50_us"] / 1000, 2),
        "p99_ms": round(summary["p99_us"] / 1000, 2),
        "errors": summary["socket_errors"] + summary["non_2xx"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    # A 2-core gateway host runs one server process per core; with the GIL, 4 threads per
    # process for database routes keep the tail shorter than 8 at the same throughput.
    parser.add_argument("--processes", type=int, default=2,
                        help="gateway server processes (one per core)")
    parser.add_argument("--api-threads", type=int, default=4,
                        help="GRIDGATE_API_THREADS of each server process")
    parser.add_argument("--no-cpu-group", action="store_true",
                        help="stay in this shell's scheduling group (shows the stalls)")
    args = parser.parse_args()
    binary = ensure_wrk()
    with contextlib.ExitStack() as stack:
        cpu_group = None if args.no_cpu_group else stack.enter_context(own_cpu_group())
        report = run(args, binary)
    report["cpu_group"] = cpu_group
    print(json.dumps(report, indent=2))


def run(args: argparse.Namespace, binary: str) -> dict[str, Any]:
    """Start PostgreSQL and the gateway, measure every series, and report."""
    with postgres_gateway(env={"GRIDGATE_API_THREADS": str(args.api_threads)},
                          args=("--processes", str(args.processes))) as served:
        runtime, token, port = served.runtime, served.token, served.process.port
        probe_url = make_url(served.db_url).set(drivername="postgresql").render_as_string(
            hide_password=False)
        url = served.process.url
        body = json.dumps(SPEC)
        import httpx

        job_id = httpx.post(f"{url}/api/v1/jobs", content=body, timeout=10, headers={
            "Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        ).json()["id"]
        requests: dict[str, dict[str, str]] = {
            "health": {"url": f"{url}/api/v1/health"},
            "get_job": {"url": f"{url}/api/v1/jobs/{job_id}", "token": token},
            "submit": {"url": f"{url}/api/v1/jobs", "token": token, "method": "POST",
                       "body": body},
        }
        results: dict[str, dict[str, Any]] = {name: {} for name in requests}
        cpu_before = cpu_times()
        for clients in CONCURRENCY:
            for name, req in requests.items():
                # Warm every server process's pools, caches and code paths first.
                wrk(binary, req["url"], clients, 1, method=req.get("method", "GET"),
                    body=req.get("body", ""), token=req.get("token", ""))
                results[name][str(clients)] = measured(lambda req=req, c=clients: wrk(
                    binary, req["url"], c, args.seconds,
                    method=req.get("method", "GET"), body=req.get("body", ""),
                    token=req.get("token", "")), port, probe_url)
        cpu = [b - a for a, b in zip(cpu_before, cpu_times(), strict=True)]
        with runtime.sessions() as session:
            stored = session.scalar(select(func.count()).select_from(Job)) or 0
    # wrk counts the responses it saw within each run; requests still in flight when a
    # run ends are stored too, so "nothing lost" means stored >= accepted.
    posted = sum(r["requests"] - r["errors"] for r in results["submit"].values()) + 1
    ratios = {c: round(results["get_job"][c]["per_s"] / results["health"][c]["per_s"], 3)
              for c in results["health"]}
    best_submit = max(r["per_s"] for r in results["submit"].values())
    report = {
        "benchmark": "api_throughput",
        "database": "postgresql",
        "seconds_per_point": args.seconds,
        "server_processes": args.processes,
        "api_threads_per_process": args.api_threads,
        "cpus": os.cpu_count(),
        "kernel": {name: sysctl(name) for name in (
            "net.core.somaxconn", "net.ipv4.tcp_max_syn_backlog", "net.ipv4.tcp_syncookies",
            "kernel.sched_autogroup_enabled")},
        # Time the hypervisor gave to other guests: high values mean a noisy neighbour
        # slowed this run, and absolute figures (not the ratios) suffer most.
        "cpu_steal_percent": round(100 * cpu[7] / max(1, sum(cpu)), 1),
        "results": results,
        "jobs_stored": stored,
        "jobs_accepted_by_api": posted,
        "ratios": {"get_job_vs_health": ratios},
        "targets": TARGETS,
        "met": {
            "submit_per_s": best_submit >= TARGETS["submit_per_s_min"],
            "get_vs_health": all(r >= TARGETS["get_vs_health_min"] for r in ratios.values()),
            "p99_get_and_health": all(
                results[name][clients]["p99_ms"] <= limit for name in ("get_job", "health")
                for clients, limit in P99_MS_MAX.items()),
            "no_lost_submissions": stored >= posted,
        },
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    return report


if __name__ == "__main__":
    main()
