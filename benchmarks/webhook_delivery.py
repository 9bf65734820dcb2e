"""Webhook deliveries per second from the worker's outbox to a local receiver, beside
plain POSTs of the same bodies to the same receiver in the same run (prints JSON; not a
test).

A gateway runtime on SQLite, or a PostgreSQL of its own (no gateway server: the API is
called in process), holds one subscription and `--jobs` jobs of one user, each with a
whole life of events (ACCEPTED and four more), written as the lifecycle writes them.
The worker's webhooks step then fans them out, signs and sends them until none is due.
Two receivers, one after the other: the tests' http.server on 127.0.0.1 speaking
HTTP/1.0 (a connection per request: its own ceiling is low) and the same server speaking
HTTP/1.1 with keep-alive (what the gateway's rate is judged on). The baselines POST the
same bodies with `http.client`: one connection each, in one thread, to the first; over
kept-alive connections from as many threads as the worker sends with, to the second.

    .venv/bin/python benchmarks/webhook_delivery.py [--jobs 200] [--postgresql]
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402

from gateway.api.app import create_app  # noqa: E402
from gateway.auth.accounts import create_local_user  # noqa: E402
from gateway.auth.tokens import issue_access_token  # noqa: E402
from gateway.db.base import utcnow  # noqa: E402
from gateway.db.engine import transaction  # noqa: E402
from gateway.db.models import Event  # noqa: E402
from gateway.runtime import Runtime, build_runtime  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from gateway.worker.context import StepContext  # noqa: E402
from gateway.worker.outbox.webhooks import (  # noqa: E402
    SEND_THREADS,
    close_connections,
    deliver_webhooks,
)
from tests.worker.webhook_receiver import Received, Receiver, receiver  # noqa: E402

TARGET_PER_S = 500
LIFE = ["STAGING_IN", "QUEUED", "RUNNING", "COMPLETED"]


class Gateway:
    """A runtime with a user who may make jobs and webhooks through the API."""

    def __init__(self, tmp: Path, **settings: Any) -> None:
        self.settings = Settings(data_dir=tmp / "data", run_worker=False,
                                 public_url="http://gateway.test",
                                 webhook_allowed_ranges="127.0.0.0/8", **settings)
        self.runtime: Runtime = build_runtime(self.settings)
        with transaction(self.runtime.sessions) as session:
            user_id = create_local_user(session, "bench", "bench-password-1").id
        token = issue_access_token(self.settings, self.runtime.keys, subject=user_id,
                                   client_id="b", scope="jobs:read jobs:write",
                                   username="bench").token
        self.headers = {"Authorization": f"Bearer {token}"}
        self.api = TestClient(create_app(runtime=self.runtime))
        self.api.__enter__()

    def hook(self, url: str) -> None:
        created = self.api.post("/api/v1/webhooks", headers=self.headers, json={"url": url})
        assert created.status_code == 201, created.text

    def jobs(self, count: int) -> list[str]:
        """`count` jobs, each with its whole life of events."""
        ids = [self.api.post("/api/v1/jobs", headers=self.headers,
                             json={"name": "bench", "executable": "/bin/true"}).json()["id"]
               for _ in range(count)]
        with transaction(self.runtime.sessions) as session:
            for job_id in ids:
                before = "ACCEPTED"
                for state in LIFE:
                    session.add(Event(job_id=job_id, at=utcnow(), from_state=before,
                                      to_state=state, reason=f"now {state}", actor="bench"))
                    before = state
        return ids

    def close(self) -> None:
        self.api.__exit__(None, None, None)
        self.runtime.close()


def _step_rate(jobs: int, target: Receiver, database_url: str | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gridgate-bench-") as tmp:
        gateway = Gateway(Path(tmp), database_url=database_url)
        gateway.hook(target.url)
        gateway.jobs(jobs)
        expected = jobs * (1 + len(LIFE))
        ctx = StepContext.of(gateway.runtime, "bench")
        started = time.perf_counter()
        passes = 0
        while deliver_webhooks(ctx) or _unique(target) < expected:
            passes += 1
            if passes > 100 * expected:
                raise RuntimeError(f"only {_unique(target)} of {expected} delivered")
        seconds = time.perf_counter() - started
        close_connections()
        gateway.close()
    assert _unique(target) == expected, "a delivery was not sent"
    # A resend (same webhook-id) follows a timeout: a loaded machine, not a fault.
    return {"delivered": expected, "resent": len(target.requests) - expected,
            "outbox_passes": passes, "webhooks_per_s": round(expected / seconds, 1)}


def _unique(target: Receiver) -> int:
    return len({r.headers["webhook-id"] for r in list(target.requests)})


def _plain_posts(url: str, sent: list[Received], threads: int, keep_alive: bool) -> float:
    """Plain POSTs of the bodies: per second."""
    parts = urlsplit(url)

    def post_all(part: list[Received]) -> None:
        conn = None
        for request in part:
            conn = conn or http.client.HTTPConnection(parts.hostname or "", parts.port,
                                                      timeout=10)
            conn.request("POST", parts.path, body=request.body, headers={
                k: v for k, v in request.headers.items()
                if k.startswith("webhook-") or k == "content-type"})
            conn.getresponse().read()
            if not keep_alive:
                conn.close()
                conn = None
        if conn is not None:
            conn.close()

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(post_all, [sent[i::threads] for i in range(threads)]))
    return len(sent) / (time.perf_counter() - started)


def run(jobs: int, postgresql: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {"jobs": jobs, "events": jobs * (1 + len(LIFE)),
                           "database": "postgresql" if postgresql else "sqlite",
                           "send_threads": SEND_THREADS}
    with tempfile.TemporaryDirectory(prefix="gridgate-bench-pg-") as tmp:
        pg = None
        if postgresql:
            from tests.pg import start_postgres
            pg = start_postgres(Path(tmp) / "pg")
        try:
            _both(jobs, out, pg.create_database("one") if pg else None,
                  pg.create_database("two") if pg else None)
        finally:
            if pg is not None:
                pg.stop()
    rate = out["keep_alive_receiver"]["webhooks_per_s"]
    out.update(target_per_s=TARGET_PER_S, held=rate >= TARGET_PER_S)
    return out


def _both(jobs: int, out: dict[str, Any], first: str | None, second: str | None) -> None:
    with receiver() as target:
        out["http_1_0_receiver"] = _step_rate(jobs, target, first)
        sent = list(target.requests)
        out["http_1_0_receiver"]["baseline_plain_posts_per_s"] = round(
            _plain_posts(target.url, sent, 1, keep_alive=False), 1)
    with receiver(keep_alive=True) as target:
        out["keep_alive_receiver"] = _step_rate(jobs, target, second)
        sent = list(target.requests)
        out["keep_alive_receiver"]["baseline_plain_posts_per_s"] = round(
            _plain_posts(target.url, sent, SEND_THREADS, keep_alive=True), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--postgresql", action="store_true",
                        help="on a PostgreSQL of its own (tests.pg) instead of SQLite")
    args = parser.parse_args()
    print(json.dumps(run(args.jobs, args.postgresql), indent=2))


if __name__ == "__main__":
    main()
