"""What open event streams cost the API (issue 29): GET /api/v1/jobs/{id} throughput and
p50/p99 latency with no streams open, with 1,000 idle streams, and with 1,000 streams
while events flow; the server processes' memory per idle stream; how long opening the
streams takes (prints JSON; not a test).

Deployed as benchmarks/api_throughput.py deploys it (two server processes, four database
threads each, the worker off, its own CPU cgroup when run as root) and loaded the same
way (`wrk`, `--clients` keep-alive connections for `--seconds`), so its p99 targets (25 ms
at 16 clients) apply. The streams are benchmarks/event_latency.py's: raw SSE connections
drained by one thread, `--streams` of them spread over `--users` users (each
user's streams see that user's jobs' events). "Flowing": this process commits
`--events-per-s` job state changes (a hold, then a release, of each user's one held job
in turn), so every event reaches the streams of one user; the flowing series is compared
with the same commits flowing with no streams open (the commits cost the shared machine
either way). Each round, in one gateway: baseline (no streams), baseline while events
flow, open the streams, idle, flowing, close them; medians over
`--rounds` (the machine is shared; ratios to the same round's baseline move less than
absolute figures). Memory: the resident set of the server processes before and after
the streams open (after a settle), the difference per stream, in the first round (later
rounds reuse the heap the first one grew). `api_cpu_percent_quiet`:
the server processes' CPU with no requests, before and with the streams (what idle
streams cost by themselves).

    .venv/bin/python benchmarks/stream_cost.py [--database postgresql|sqlite] [--rounds 3]
        [--streams 1000] [--users 10] [--seconds 8] [--clients 16] [--events-per-s 20]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from benchmarks.api_throughput import (  # noqa: E402
    P99_MS_MAX,
    cpu_times,
    ensure_wrk,
    own_cpu_group,
    wrk,
)
from benchmarks.event_latency import Streams  # noqa: E402
from gateway.auth.accounts import create_local_user  # noqa: E402
from gateway.auth.tokens import issue_access_token  # noqa: E402
from gateway.db.engine import transaction  # noqa: E402
from gateway.domain.principal import Principal  # noqa: E402
from gateway.runtime import Runtime, build_runtime  # noqa: E402
from gateway.services.jobs import holds  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from tests.pg import start_postgres  # noqa: E402
from tests.worker.gateway_process import GatewayProcess, free_port  # noqa: E402

TARGETS = {"get_ratio_min": 0.8}
SPEC = {"name": "bench-stream-cost", "executable": "/bin/true"}
# After the streams open (or close): let the servers' allocations and queues settle.
SETTLE_SECONDS = 2.0
QUIET_SECONDS = 5.0
CLK_TCK = os.sysconf("SC_CLK_TCK")
# Each with-streams series against the baseline without streams under the same load.
SERIES = ("baseline", "baseline_events_flowing", "idle_streams", "events_flowing")


def server_pids(gateway: GatewayProcess) -> list[int]:
    """The server processes `serve --processes N` started (the children of its pid)."""
    assert gateway.proc is not None
    pid = gateway.proc.pid
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    return [int(c) for c in children] or [pid]


def rss_kib(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                total += int(line.split()[1])
    return total


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU the processes used so far."""
    ticks = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / CLK_TCK


class Committer:
    """Commits `per_s` job state changes a second, each user's held job in turn (a
    release, then a hold), on a connection of this process."""

    def __init__(self, runtime: Runtime, users: list[tuple[Principal, str]],
                 per_s: float) -> None:
        self.runtime, self.users, self.per_s = runtime, users, per_s
        self.committed = self.late = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        began = time.perf_counter()
        while not self._stop.is_set():
            principal, job_id = self.users[self.committed % len(self.users)]
            change = holds.release if (self.committed // len(self.users)) % 2 == 0 \
                else holds.hold
            with transaction(self.runtime.sessions) as session:
                change(session, principal, job_id)
            self.committed += 1
            wait = began + self.committed / self.per_s - time.perf_counter()
            if wait < 0:
                self.late += 1
            elif self._stop.wait(wait):
                return

    def __enter__(self) -> Committer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()


@contextlib.contextmanager
def open_streams(port: int, tokens: list[str], count: int) -> Iterator[tuple[Streams, float]]:
    """`count` SSE streams spread over `tokens`' users (one draining thread: the client's
    CPU shares the machine), and the seconds until every one had its response (its
    `retry:` line)."""
    began = time.perf_counter()
    streams = Streams(port, tokens, count, 0, "")
    try:
        while streams.subscribed < count and time.perf_counter() - began < 300:
            time.sleep(0.01)
        yield streams, time.perf_counter() - began
    finally:
        streams.close()


def quiet_cpu_percent(pids: list[int]) -> float:
    """The server processes' CPU over QUIET_SECONDS without requests, in % of one core."""
    before = cpu_seconds(pids)
    time.sleep(QUIET_SECONDS)
    return round(100 * (cpu_seconds(pids) - before) / QUIET_SECONDS, 1)


def series(binary: str, url: str, args: argparse.Namespace, token: str,
           pids: list[int]) -> dict[str, Any]:
    before, mine = cpu_seconds(pids), time.process_time()
    result = wrk(binary, url, args.clients, args.seconds, token=token)
    result["api_cpu_s"] = round(cpu_seconds(pids) - before, 2)
    # This process's CPU (stream drain, commits): it shares the machine with the API.
    result["bench_cpu_s"] = round(time.process_time() - mine, 2)
    return result


def one_round(binary: str, gateway: GatewayProcess, url: str, args: argparse.Namespace,
              tokens: list[str], runtime: Runtime,
              users: list[tuple[Principal, str]]) -> dict[str, Any]:
    pids = server_pids(gateway)
    found: dict[str, Any] = {"quiet_cpu_percent_no_streams": quiet_cpu_percent(pids)}
    found["baseline"] = series(binary, url, args, tokens[0], pids)
    with Committer(runtime, users, args.events_per_s):
        found["baseline_events_flowing"] = series(binary, url, args, tokens[0], pids)
    rss_before = rss_kib(pids)
    with open_streams(gateway.port, tokens, args.streams) as (streams, seconds):
        subscribed = streams.subscribed
        time.sleep(SETTLE_SECONDS)
        rss_after = rss_kib(pids)
        found["quiet_cpu_percent_with_streams"] = quiet_cpu_percent(pids)
        found["idle_streams"] = series(binary, url, args, tokens[0], pids)
        received = streams.bytes
        with Committer(runtime, users, args.events_per_s) as committer:
            found["events_flowing"] = series(binary, url, args, tokens[0], pids)
        found["events_flowing"].update({
            "events_committed": committer.committed, "commits_late": committer.late,
            "stream_bytes_received": streams.bytes - received})
        still_open = streams.open
    time.sleep(SETTLE_SECONDS)
    found.update({
        "streams_subscribed": subscribed, "streams_open_at_end": still_open,
        "seconds_to_open_streams": round(seconds, 2),
        "server_rss_kib_before": rss_before, "server_rss_kib_with_streams": rss_after,
        "kib_per_idle_stream": round((rss_after - rss_before) / args.streams, 1),
        "server_rss_kib_after_close": rss_kib(pids)})
    for name, against in (("idle_streams", "baseline"),
                          ("events_flowing", "baseline_events_flowing")):
        found[name]["per_s_vs_baseline"] = round(
            found[name]["per_s"] / found[against]["per_s"], 3)
    return found


def median_of(rounds: list[dict[str, Any]], *keys: str) -> float:
    values = []
    for found in rounds:
        value: Any = found
        for key in keys:
            value = value[key]
        values.append(value)
    return round(float(statistics.median(values)), 3)


def setup(settings: Settings, runtime: Runtime, count: int
          ) -> tuple[list[str], list[Principal]]:
    tokens, principals = [], []
    for index in range(count):
        name = f"stream{index}"
        with transaction(runtime.sessions) as session:
            user = create_local_user(session, name, "bench-password-1")
            principals.append(Principal(user.id, user.issuer, user.subject, name,
                                        roles=frozenset({"researcher"})))
        tokens.append(issue_access_token(settings, runtime.keys, subject=user.id,
                                         client_id="bench", scope="jobs:read jobs:write",
                                         username=name).token)
    return tokens, principals


def run(args: argparse.Namespace, binary: str) -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4 * args.streams + 256)),
                                                hard))
    with tempfile.TemporaryDirectory(prefix="gridgate-bench-") as tmp:
        base = Path(tmp)
        pg = start_postgres(base / "pg") if args.database == "postgresql" else None
        gateway = None
        try:
            db_url = pg.create_database("bench") if pg is not None \
                else f"sqlite:///{base}/gateway.db"
            settings = Settings(data_dir=base / "data", database_url=db_url,
                                public_url="http://127.0.0.1", run_worker=False)
            runtime = build_runtime(settings)
            tokens, principals = setup(settings, runtime, args.users)
            port = free_port()
            gateway = GatewayProcess({
                "GRIDGATE_DATA_DIR": str(settings.data_dir), "GRIDGATE_DATABASE_URL": db_url,
                "GRIDGATE_PUBLIC_URL": settings.public_url, "GRIDGATE_PORT": str(port),
                "GRIDGATE_RUN_WORKER": "false", "GRIDGATE_API_THREADS": str(args.api_threads),
                "GRIDGATE_OUTPUT_MAX_STREAMS": str(args.streams),
                "GRIDGATE_OUTPUT_MAX_STREAMS_PER_USER": str(args.streams),
            }, base / "gateway.log",
               args=("--log-level", "warning", "--processes", str(args.processes)))
            gateway.start()
            jobs = []
            for token, principal in zip(tokens, principals, strict=True):
                job_id = httpx.post(f"{gateway.url}/api/v1/jobs", json=SPEC, timeout=30,
                                    headers={"Authorization": f"Bearer {token}"}).json()["id"]
                with transaction(runtime.sessions) as session:
                    holds.hold(session, principal, job_id)
                jobs.append((principal, job_id))
            url = f"{gateway.url}/api/v1/jobs/{jobs[0][1]}"
            wrk(binary, url, args.clients, 2, token=tokens[0])  # warm every process
            cpu_before = cpu_times()
            rounds = [one_round(binary, gateway, url, args, tokens, runtime, jobs)
                      for _ in range(args.rounds)]
            cpu = [b - a for a, b in zip(cpu_before, cpu_times(), strict=True)]
            runtime.close()
        finally:
            if gateway is not None:
                gateway.stop()
            if pg is not None:
                pg.stop()
    return report(args, rounds, cpu)


def report(args: argparse.Namespace, rounds: list[dict[str, Any]], cpu: list[int]
           ) -> dict[str, Any]:
    p99_max = P99_MS_MAX.get(str(args.clients))
    medians: dict[str, Any] = {}
    for name in SERIES:
        medians[name] = {key: median_of(rounds, name, key)
                         for key in ("per_s", "p50_ms", "p99_ms", "api_cpu_s",
                                     "bench_cpu_s")}
        if not name.startswith("baseline"):
            medians[name]["per_s_vs_baseline"] = median_of(rounds, name, "per_s_vs_baseline")
    for key in ("seconds_to_open_streams", "quiet_cpu_percent_no_streams",
                "quiet_cpu_percent_with_streams"):
        medians[key] = median_of(rounds, key)
    # Memory: the first opening only. Later rounds reuse what the first left in the
    # processes' heaps (RSS does not shrink when streams close).
    medians["kib_per_idle_stream"] = rounds[0]["kib_per_idle_stream"]
    errors = sum(r[name]["errors"] for r in rounds
                 for name in SERIES)
    met: dict[str, bool | None] = {
        "get_ratio": all(medians[name]["per_s_vs_baseline"] >= TARGETS["get_ratio_min"]
                         for name in ("idle_streams", "events_flowing")),
        "p99_within_api_target": None if p99_max is None else all(
            medians[name]["p99_ms"] <= p99_max
            for name in ("idle_streams", "events_flowing")),
        "all_streams_open": all(r["streams_subscribed"] == args.streams
                                and r["streams_open_at_end"] == args.streams for r in rounds),
        "no_errors": errors == 0,
    }
    return {
        "benchmark": "stream_cost", "database": args.database,
        "server_processes": args.processes, "api_threads_per_process": args.api_threads,
        "clients": args.clients, "seconds_per_series": args.seconds, "rounds": args.rounds,
        "streams": args.streams, "users": args.users, "events_per_s": args.events_per_s,
        "cpus": os.cpu_count(),
        "cpu_steal_percent": round(100 * cpu[7] / max(1, sum(cpu)), 1),
        "medians": medians,
        "targets": {**TARGETS, "p99_ms_max": p99_max,
                    "p99_source": "benchmarks/api_throughput.py P99_MS_MAX (GET job)"},
        "met": met,
        "per_round": rounds,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("postgresql", "sqlite"), default="postgresql")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--streams", type=int, default=1000)
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--events-per-s", type=float, default=20.0)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--api-threads", type=int, default=4)
    parser.add_argument("--no-cpu-group", action="store_true")
    args = parser.parse_args()
    binary = ensure_wrk()
    with contextlib.ExitStack() as stack:
        group = None if args.no_cpu_group else stack.enter_context(own_cpu_group())
        found = run(args, binary)
    found["cpu_group"] = group
    print(json.dumps(found, indent=2))


if __name__ == "__main__":
    main()
