"""Submissions per second through the API on PostgreSQL with the audit log on and off, with
one and two API process groups (prints JSON; not a test). Issue 32's target: with the log
on, at 16 and 64 clients, at least 0.9x the same build with it off, and rising with a
second group.

A group is one `gridgate serve` process (worker off, GRIDGATE_API_THREADS 4) on a port of
its own; every group serves the same PostgreSQL, as gateway hosts would. With two groups,
one wrk per group carries half the clients. "Off" is the same build with the log's writes
dropped (benchmarks/serve_without_audit.py). The rounds interleave on and off, one and two
groups, so drift hits all alike; each figure is the median over rounds.

Commits only insert entries; the sequencer takes them into the tree afterwards. So the
run also times the sequencer over the entries the "on" runs left: it must outpace the
submissions, or the log would fall behind.

    .venv/bin/python benchmarks/audit_scaling.py [--seconds 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import func, select  # noqa: E402

from benchmarks.api_throughput import cpu_times, ensure_wrk, own_cpu_group, wrk  # noqa: E402
from benchmarks.bench_gateway import researcher_token  # noqa: E402
from gateway.db.audit_models import AuditEvent  # noqa: E402
from gateway.runtime import Runtime, build_runtime  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from gateway.worker.periodic.audit_sequencer import take_in  # noqa: E402
from tests.pg import start_postgres  # noqa: E402
from tests.worker.gateway_process import GatewayProcess, free_port  # noqa: E402

CLIENTS = (16, 64)
GROUPS = (1, 2)
MODES = {"on": "gateway.cli.main", "off": "benchmarks.serve_without_audit"}
SPEC = json.dumps({"name": "bench", "executable": "/bin/true"})
TARGET_RATIO_MIN = 0.9


@contextlib.contextmanager
def groups(settings: Settings, count: int, module: str, log: Path) -> Any:
    """`count` API process groups on the database of `settings`; their URLs."""
    started = []
    try:
        for _ in range(count):
            process = GatewayProcess({
                "GRIDGATE_DATA_DIR": str(settings.data_dir),
                "GRIDGATE_DATABASE_URL": str(settings.database_url),
                "GRIDGATE_PUBLIC_URL": settings.public_url, "GRIDGATE_PORT": str(free_port()),
                "GRIDGATE_RUN_WORKER": "false", "GRIDGATE_API_THREADS": "4",
                "PYTHONPATH": str(ROOT)}, log, args=("--log-level", "warning"), module=module)
            process.start()
            started.append(process)
        yield [p.url for p in started]
    finally:
        for process in started:
            process.stop()


def load(binary: str, urls: list[str], clients: int, seconds: float, token: str
         ) -> dict[str, Any]:
    """Submissions from `clients` connections split evenly over `urls`, all at once."""
    results: list[dict[str, Any]] = [{} for _ in urls]

    def one(i: int) -> None:
        results[i] = wrk(binary, f"{urls[i]}/api/v1/jobs", clients // len(urls), seconds,
                         method="POST", body=SPEC, token=token)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(urls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"per_s": round(sum(r["per_s"] for r in results), 1),
            "p99_ms": max(r["p99_ms"] for r in results),
            "errors": sum(r["errors"] for r in results)}


def sequencer_rate(runtime: Runtime) -> dict[str, Any]:
    """Take every waiting entry into the tree; entries per second."""
    with runtime.sessions() as s:
        waiting = s.scalar(select(func.count()).where(AuditEvent.seq.is_(None))) or 0
    start = time.perf_counter()
    steps = 0
    while take_in(runtime, every=0) is not None:
        steps += 1
    seconds = time.perf_counter() - start
    return {"entries": waiting, "steps": steps, "seconds": round(seconds, 2),
            "entries_per_s": round(waiting / seconds, 1) if seconds else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    binary = ensure_wrk()
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(
            prefix="gridgate-bench-") as tmp:
        cpu_group = stack.enter_context(own_cpu_group())
        pg = start_postgres(Path(tmp) / "pg")
        stack.callback(pg.stop)
        settings = Settings(data_dir=Path(tmp) / "data", database_url=pg.create_database("b"),
                            public_url="http://127.0.0.1", run_worker=False)
        runtime = build_runtime(settings)
        stack.callback(runtime.close)
        _, token = researcher_token(runtime)
        runs: dict[str, list[float]] = {}
        cpu_before = cpu_times()
        for _ in range(args.rounds):
            for mode, module in MODES.items():
                for count in GROUPS:
                    with groups(settings, count, module, Path(tmp) / "gateway.log") as urls:
                        load(binary, urls, 16, 1, token)  # warm pools and code paths
                        for clients in CLIENTS:
                            got = load(binary, urls, clients, args.seconds, token)
                            runs.setdefault(f"{mode}/{count}/{clients}", []).append(
                                got["per_s"])
        cpu = [b - a for a, b in zip(cpu_before, cpu_times(), strict=True)]
        sequencer = sequencer_rate(runtime)
    median = {key: statistics.median(values) for key, values in runs.items()}
    results: dict[str, Any] = {}
    for clients in CLIENTS:
        for count in GROUPS:
            on, off = median[f"on/{count}/{clients}"], median[f"off/{count}/{clients}"]
            results[f"{clients}_clients_{count}_groups"] = {
                "submit_per_s_log_on": on, "submit_per_s_log_off": off,
                "ratio": round(on / off, 3), "rounds_on": runs[f"on/{count}/{clients}"],
                "rounds_off": runs[f"off/{count}/{clients}"]}
    rising = {str(c): round(median[f"on/2/{c}"] / median[f"on/1/{c}"], 3) for c in CLIENTS}
    print(json.dumps({
        "benchmark": "audit_scaling", "database": "postgresql", "cpus": os.cpu_count(),
        "seconds_per_point": args.seconds, "rounds": args.rounds, "cpu_group": cpu_group,
        "cpu_steal_percent": round(100 * cpu[7] / max(1, sum(cpu)), 1),
        "results": results, "two_groups_vs_one_log_on": rising,
        "sequencer": sequencer,
        "target": {"ratio_min": TARGET_RATIO_MIN, "two_groups_vs_one_min": 1.0},
        "met": {"ratio": all(r["ratio"] >= TARGET_RATIO_MIN for r in results.values()),
                "rising": all(v > 1.0 for v in rising.values())},
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }, indent=2))


if __name__ == "__main__":
    main()
