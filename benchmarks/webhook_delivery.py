"""Webhook deliveries per second from the worker's outbox to a local receiver, beside
plain POSTs of the same bodies to the same receiver in the same run (prints JSON; not a
test).

A gateway runtime on SQLite (no server: the API is called in process) holds one
subscription and `--jobs` jobs of one user, each with a whole life of events (ACCEPTED
and four more), written as the lifecycle writes them. The worker's webhooks step then
fans them out, signs and sends them until none is due. The receiver is the tests' real
HTTP server on 127.0.0.1; the baseline POSTs as many bodies with `http.client`, one
connection each, as the step does.

    .venv/bin/python benchmarks/webhook_delivery.py [--jobs 200]
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import tempfile
import time
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
from gateway.runtime import build_runtime  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from gateway.worker.context import StepContext  # noqa: E402
from gateway.worker.webhooks import deliver_webhooks  # noqa: E402
from tests.worker.webhook_receiver import receiver  # noqa: E402

TARGET_PER_S = 500
LIFE = ["STAGING_IN", "QUEUED", "RUNNING", "COMPLETED"]


def run(jobs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gridgate-bench-") as tmp, receiver() as target:
        settings = Settings(data_dir=Path(tmp) / "data", run_worker=False,
                            public_url="http://gateway.test",
                            webhook_allowed_ranges="127.0.0.0/8")
        runtime = build_runtime(settings)
        with transaction(runtime.sessions) as session:
            user_id = create_local_user(session, "bench", "bench-password-1").id
        token = issue_access_token(settings, runtime.keys, subject=user_id, client_id="b",
                                   scope="jobs:read jobs:write", username="bench").token
        headers = {"Authorization": f"Bearer {token}"}
        with TestClient(create_app(runtime=runtime)) as api:
            created = api.post("/api/v1/webhooks", headers=headers, json={"url": target.url})
            assert created.status_code == 201, created.text
            ids = [api.post("/api/v1/jobs", headers=headers,
                            json={"name": "bench", "executable": "/bin/true"}).json()["id"]
                   for _ in range(jobs)]
        with transaction(runtime.sessions) as session:
            for job_id in ids:
                before = "ACCEPTED"
                for state in LIFE:
                    session.add(Event(job_id=job_id, at=utcnow(), from_state=before,
                                      to_state=state, reason=f"now {state}", actor="bench"))
                    before = state
        expected = jobs * (1 + len(LIFE))
        ctx = StepContext.of(runtime, "bench")
        started = time.perf_counter()
        passes = 0
        while deliver_webhooks(ctx) or len(target.requests) < expected:
            passes += 1
            if passes > 100 * expected:
                raise RuntimeError(f"only {len(target.requests)} of {expected} delivered")
        step_seconds = time.perf_counter() - started
        delivered = len(target.requests)
        bodies = [(r.body, r.headers) for r in target.requests]
        runtime.close()
        # The baseline: the same bodies and headers, POSTed one connection each.
        url = urlsplit(target.url)
        started = time.perf_counter()
        for body, sent in bodies:
            conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
            conn.request("POST", url.path, body=body, headers={
                k: v for k, v in sent.items() if k.startswith("webhook-") or
                k == "content-type"})
            conn.getresponse().read()
            conn.close()
        raw_seconds = time.perf_counter() - started
    step_rate = delivered / step_seconds
    return {"jobs": jobs, "events": expected, "delivered": delivered,
            "outbox_passes": passes, "database": "sqlite",
            "webhooks_per_s": round(step_rate, 1),
            "baseline_plain_posts_per_s": round(len(bodies) / raw_seconds, 1),
            "target_per_s": TARGET_PER_S, "held": step_rate >= TARGET_PER_S}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=200)
    print(json.dumps(run(parser.parse_args().jobs), indent=2))


if __name__ == "__main__":
    main()
