"""GA4GH TES against the gateway's own API, on PostgreSQL with the worker paused (prints
JSON; not a test). Issue 30's targets:

- create: `POST /ga4gh/tes/v1/tasks` against `POST /api/v1/jobs` of the job that task
  becomes (the same container job), alternated request by request on one keep-alive
  connection so both see the same noise: median and p99 latency, and the ratio of the
  medians (target: TES within 1.2x); then accepted per second with `--clients` threads;
- list: `GET /ga4gh/tes/v1/tasks?view=BASIC` walked page by page over `--tasks` tasks
  (10,000 by default), at the default page size (256) and at 500, beside the native
  `GET /api/v1/jobs` pages of the same size (target: every TES page under 200 ms; the
  figure is the p99 and the slowest page). The native listing holds the tasks and the
  jobs posted natively; TES lists only its tasks (their own index).

    .venv/bin/python benchmarks/tes_api.py [--creates 300] [--tasks 10000] [--clients 8]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_gateway import postgres_gateway  # noqa: E402

TES = "/ga4gh/tes/v1"
TASK: dict[str, Any] = {
    "name": "bench", "tags": {"bench": "tes"},
    "executors": [{"image": "alpine:3.20", "command": ["echo", "hello"],
                   "env": {"GREETING": "hi"}}],
    "resources": {"cpu_cores": 1, "ram_gb": 0.5},
}
# The job the task becomes (gateway/api/tes/task_spec.py), posted natively.
JOB: dict[str, Any] = {
    "name": "bench", "labels": {"bench": "tes"}, "executable": "echo", "args": ["hello"],
    "resources": {"ranks": 1, "threads_per_rank": 1, "memory_mb": 512},
    "container": {"image": "docker://alpine:3.20", "environment": {"GREETING": "hi"}},
}
TARGETS = {"create_ratio_max": 1.2, "list_page_ms_max": 200.0}


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median_ms": round(statistics.median(ordered), 2),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 2),
            "max_ms": round(ordered[-1], 2), "n": len(ordered)}


def timed(call: Callable[[], httpx.Response], expect: int) -> float:
    began = time.perf_counter()
    response = call()
    elapsed = (time.perf_counter() - began) * 1000
    if response.status_code != expect:
        raise SystemExit(f"{response.request.method} {response.request.url}: "
                         f"{response.status_code} {response.text[:500]}")
    return elapsed


def creates(http: httpx.Client, count: int) -> dict[str, Any]:
    """Alternate TES and native creates, `count` of each."""
    tes: list[float] = []
    native: list[float] = []
    for _ in range(count):
        tes.append(timed(lambda: http.post(f"{TES}/tasks", json=TASK), 200))
        native.append(timed(lambda: http.post("/api/v1/jobs", json=JOB), 202))
    ratio = statistics.median(tes) / statistics.median(native)
    return {"tes": percentiles(tes), "native": percentiles(native),
            "median_ratio": round(ratio, 3), "met": ratio <= TARGETS["create_ratio_max"]}


def throughput(url: str, headers: dict[str, str], clients: int, each: int) -> dict[str, Any]:
    """Accepted per second with `clients` threads, each creating `each`: TES, then native."""
    def run(path: str, body: dict[str, Any], expect: int) -> float:
        def client(_: int) -> None:
            with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
                for _ in range(each):
                    if http.post(path, json=body).status_code != expect:
                        raise SystemExit(f"POST {path} refused")
        began = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            list(pool.map(client, range(clients)))
        return clients * each / (time.perf_counter() - began)

    tes = run(f"{TES}/tasks", TASK, 200)
    native = run("/api/v1/jobs", JOB, 202)
    return {"clients": clients, "tes_per_s": round(tes, 1), "native_per_s": round(native, 1),
            "ratio": round(native / tes, 3)}


def fill(url: str, headers: dict[str, str], clients: int, count: int) -> None:
    """Create `count` more tasks with `clients` threads."""
    def client(share: int) -> None:
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            for _ in range(share):
                http.post(f"{TES}/tasks", json=TASK).raise_for_status()

    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, [count // clients + (i < count % clients)
                               for i in range(clients)]))


def walk(http: httpx.Client, path: str, params: dict[str, Any], items: str, token: str
         ) -> tuple[list[float], int]:
    """Every page of a listing: the time of each, and how many items came."""
    pages: list[float] = []
    seen = 0
    cursor: str | None = None
    while True:
        query = {**params, **({token: cursor} if cursor else {})}
        began = time.perf_counter()
        response = http.get(path, params=query)
        pages.append((time.perf_counter() - began) * 1000)
        response.raise_for_status()
        body = response.json()
        seen += len(body[items])
        cursor = body.get("next_page_token" if token == "page_token" else "next_cursor")
        if not cursor:
            return pages, seen


def listing(http: httpx.Client) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for size in (256, 500):
        tes, listed = walk(http, f"{TES}/tasks", {"view": "BASIC", "page_size": size},
                           "tasks", "page_token")
        native, _ = walk(http, "/api/v1/jobs", {"limit": size}, "items", "cursor")
        found[str(size)] = {"tes_basic": percentiles(tes), "native": percentiles(native),
                            "items": listed, "met": max(tes) < TARGETS["list_page_ms_max"]}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--creates", type=int, default=300)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    with postgres_gateway() as served:
        url = served.process.url
        headers = {"Authorization": f"Bearer {served.token}"}
        with httpx.Client(base_url=url, headers=headers, timeout=60) as http:
            creates(http, 20)  # warm the server's pools, caches and code paths
            created = creates(http, args.creates)
            rates = throughput(url, headers, args.clients, 25)
            # TES lists the tasks (the jobs created through it): top up to --tasks.
            made = 20 + args.creates + args.clients * 25
            fill(url, headers, args.clients, max(args.tasks - made, 0))
            listed = listing(http)
    print(json.dumps({
        "benchmark": "tes_api", "database": "postgresql", "cpus": os.cpu_count(),
        "load_average_1min": round(os.getloadavg()[0], 2),
        "create": created, "throughput": rates, "list": listed, "targets": TARGETS,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }, indent=2))


if __name__ == "__main__":
    main()
