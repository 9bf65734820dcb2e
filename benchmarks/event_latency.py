"""Event latency: from the commit of a job's state change to an SSE client receiving it,
with many subscribers connected, on PostgreSQL behind two API processes (prints JSON;
not a test).

This process plays the worker: it commits the changes (a hold, then a release, of one
held job, each one event) through the services, on its own connection, so every event
reaches the API processes by NOTIFY. `--subscribers` streams stay open; `--probes` of
them follow every event and time it, the others watch another job (connected, offered
every event by the hub, sent none: each user's stream sees their own jobs). With
`--broadcast` every stream receives every event (one user with 1,000 streams: the
worst case of fan-out). All are drained by one thread. The baseline, in the same run:
a client polling GET /api/v1/jobs/{id} at 1 s (the steady cadence of `gridgate wait`),
timed to the same commits.

    .venv/bin/python benchmarks/event_latency.py [--subscribers 1000] [--events 200]
"""

from __future__ import annotations

import argparse
import json
import resource
import selectors
import socket
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from sqlalchemy import text  # noqa: E402

from gateway.auth.accounts import create_local_user  # noqa: E402
from gateway.auth.tokens import issue_access_token  # noqa: E402
from gateway.db.engine import transaction  # noqa: E402
from gateway.domain.principal import Principal  # noqa: E402
from gateway.runtime import build_runtime  # noqa: E402
from gateway.services.jobs import holds  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from tests.pg import start_postgres  # noqa: E402
from tests.worker.gateway_process import GatewayProcess, free_port  # noqa: E402

TARGETS = {"p50_ms_max": 20, "p99_ms_max": 100}
SPEC = {"name": "bench-events", "executable": "/bin/true"}
# Time between commits: long enough for the poller to see each one.
GAP_SECONDS = 1.3


class Streams:
    """Raw SSE connections on one selector thread: every one is drained; the probes
    note when each event id arrives. Several tokens: the streams go to their users in
    turn."""

    def __init__(self, port: int, token: str | list[str], count: int, probes: int,
                 idle_query: str) -> None:
        tokens = [token] if isinstance(token, str) else token
        self.selector = selectors.DefaultSelector()
        self.arrived: dict[int, list[float]] = {}  # event id -> arrival per probe
        self.bytes = 0

        def request(query: str, token: str) -> bytes:
            return (f"GET /api/v1/events{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                    f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
                    ).encode()
        self.open = self.subscribed = 0
        for index in range(count):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(request("" if index < probes else idle_query,
                                 tokens[index % len(tokens)]))
            sock.setblocking(False)
            self.selector.register(sock, selectors.EVENT_READ, [index < probes, b"", False])
            self.open += 1
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()

    def _drain(self) -> None:
        while not self.stop.is_set():
            for key, _ in self.selector.select(timeout=0.2):
                data = key.fileobj.recv(1 << 16)  # type: ignore[union-attr]
                now = time.perf_counter()
                if not data:
                    self.selector.unregister(key.fileobj)
                    self.open -= 1
                    continue
                self.bytes += len(data)
                if not key.data[2] and b"retry:" in data:  # its response began: subscribed
                    key.data[2] = True
                    self.subscribed += 1
                probe, rest, _ = key.data
                if not probe:
                    continue
                rest += data
                while b"\n" in rest:
                    line, rest = rest.split(b"\n", 1)
                    if line.startswith(b"id: "):
                        self.arrived.setdefault(int(line[4:]), []).append(now)
                key.data[1] = rest

    def close(self) -> None:
        self.stop.set()
        self.thread.join()
        for key in list(self.selector.get_map().values()):
            key.fileobj.close()  # type: ignore[union-attr]


def poller(url: str, token: str, job_id: str, seen: list[tuple[float, str]],
           stop: threading.Event) -> None:
    """GET the job every second; note each answer's `reason` and when it came."""
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}) as http:
        while not stop.is_set():
            try:
                reason = http.get(f"/api/v1/jobs/{job_id}").json()["reason"]
            except httpx.HTTPError as exc:  # counted as not seen
                seen.append((time.perf_counter(), f"error: {exc!r}"))
                stop.wait(1.0)
                continue
            seen.append((time.perf_counter(), reason))
            stop.wait(1.0)


def summary(latencies: list[float]) -> dict[str, Any]:
    ordered = sorted(latencies)
    if not ordered:
        return {"n": 0}
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered) * 1000, 2),
            "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
            "max_ms": round(ordered[-1] * 1000, 2)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4 * args.subscribers)),
                                                hard))
    with tempfile.TemporaryDirectory(prefix="gridgate-bench-") as tmp:
        base = Path(tmp)
        pg = start_postgres(base / "pg")
        gateway = None
        try:
            db_url = pg.create_database("bench")
            settings = Settings(data_dir=base / "data", database_url=db_url,
                                public_url="http://127.0.0.1", run_worker=False)
            runtime = build_runtime(settings)
            with transaction(runtime.sessions) as session:
                user = create_local_user(session, "bench", "bench-password-1")
                principal = Principal(user.id, user.issuer, user.subject, "bench",
                                      roles=frozenset({"researcher"}))
            token = issue_access_token(settings, runtime.keys, subject=principal.user_id,
                                       client_id="bench", scope="jobs:read jobs:write",
                                       username="bench").token
            port = free_port()
            gateway = GatewayProcess({
                "GRIDGATE_DATA_DIR": str(settings.data_dir), "GRIDGATE_DATABASE_URL": db_url,
                "GRIDGATE_PUBLIC_URL": settings.public_url, "GRIDGATE_PORT": str(port),
                "GRIDGATE_RUN_WORKER": "false",
                "GRIDGATE_OUTPUT_MAX_STREAMS": str(args.subscribers),
                "GRIDGATE_OUTPUT_MAX_STREAMS_PER_USER": str(args.subscribers),
            }, base / "gateway.log", args=("--log-level", "warning", "--processes", "2"))
            gateway.start()
            gateway.wait_healthy()
            headers = {"Authorization": f"Bearer {token}"}
            job_id = httpx.post(f"{gateway.url}/api/v1/jobs", json=SPEC, headers=headers,
                                timeout=30).json()["id"]
            other = httpx.post(f"{gateway.url}/api/v1/jobs", json=SPEC, headers=headers,
                               timeout=30).json()["id"]
            with transaction(runtime.sessions) as session:
                holds.hold(session, principal, job_id)
            streams = Streams(port, token, args.subscribers, args.probes,
                              "" if args.broadcast else f"?job={other}")
            began = time.perf_counter()
            while streams.subscribed < args.subscribers and time.perf_counter() - began < 120:
                time.sleep(0.05)
            subscribe_seconds = time.perf_counter() - began
            connected = streams.subscribed
            seen: list[tuple[float, str]] = []
            stop = threading.Event()
            polling = threading.Thread(target=poller, args=(gateway.url, token, job_id,
                                                            seen, stop), daemon=True)
            polling.start()
            committed: list[tuple[float, str]] = []
            for index in range(args.events):
                change = holds.release if index % 2 == 0 else holds.hold
                with transaction(runtime.sessions) as session:
                    reason = change(session, principal, job_id)["reason"]
                committed.append((time.perf_counter(), reason or ""))
                time.sleep(GAP_SECONDS if index < args.polled_events else args.gap)
            time.sleep(2)
            stop.set()
            polling.join()
            streams.close()
            with runtime.reading() as conn:
                ids = [int(i) for i in conn.execute(text(
                    "SELECT id FROM events WHERE job_id = :j ORDER BY id"),
                    {"j": job_id}).scalars()]
            ids = ids[len(ids) - args.events:]
            sse: list[float] = []
            missing = 0
            for (at, _), event_id in zip(committed, ids, strict=True):
                arrivals = streams.arrived.get(event_id, [])
                missing += args.probes - len(arrivals)
                sse.extend(t - at for t in arrivals)
            # Each spaced commit against the first poll after it that shows it (the
            # reasons alternate: hold, release, hold...).
            polled = []
            spaced = committed[:args.polled_events]
            for (at, reason), (following, _) in zip(
                    spaced, [*committed[1:args.polled_events + 1], (float("inf"), "")],
                    strict=False):
                sights = [t for t, r in seen if at < t < following and r == reason]
                if sights:
                    polled.append(sights[0] - at)
            runtime.close()
            sse_summary = summary(sse)
            return {
                "database": "postgresql", "api_processes": 2,
                "subscribers_connected": connected,
                "seconds_until_all_subscribed": round(subscribe_seconds, 2),
                "events": args.events,
                "receivers": args.subscribers if args.broadcast else args.probes,
                "seconds_between_events": args.gap,
                "probes": args.probes, "missing_arrivals": missing,
                "sse_commit_to_client": sse_summary,
                "baseline_poll_1s_commit_to_client": summary(polled),
                "baseline_poll_errors": sorted({r for _, r in seen if r.startswith("error")}),
                "targets": TARGETS,
                "held": {"p50": sse_summary.get("p50_ms", 1e9) <= TARGETS["p50_ms_max"],
                         "p99": sse_summary.get("p99_ms", 1e9) <= TARGETS["p99_ms_max"],
                         "all_subscribers_connected": connected == args.subscribers,
                         "none_missing": missing == 0},
            }
        finally:
            if gateway is not None:
                gateway.stop()
            pg.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--subscribers", type=int, default=1000)
    parser.add_argument("--probes", type=int, default=10)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--polled-events", type=int, default=10,
                        help="the first events, spaced for the polling baseline")
    parser.add_argument("--gap", type=float, default=0.1,
                        help="seconds between the other events")
    parser.add_argument("--broadcast", action="store_true",
                        help="every stream receives every event")
    print(json.dumps(run(parser.parse_args()), indent=2))


if __name__ == "__main__":
    main()
