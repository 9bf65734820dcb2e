"""`submit --wait` of a 1-second job: how soon the wait returns after the job ends, on the
event stream against polling, in the same run (prints JSON; not a test).

A `gridgate serve` (SQLite, its worker in the same process, the local site) runs jobs
that sleep 1 s and print the time they end. Each is waited for by `GatewayClient.wait`
(the event stream) or by `poll_for_state` at 1 s (what `wait` did before the stream),
alternately. The gap reported is from the job's last output (its process ending) to
the wait returning. It has two parts: the worker noticing the end (its status cycle,
`worker_poll_seconds`: the run is made at the default 1 s and at 0.1 s) and the wait
noticing the final state (what the stream changes).

    .venv/bin/python benchmarks/submit_wait.py [--jobs 20]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_gateway import researcher_token  # noqa: E402
from gateway.client import GatewayClient  # noqa: E402
from gateway.client.job_waits import poll_for_state  # noqa: E402
from gateway.client.models import FINAL_STATES  # noqa: E402
from gateway.runtime import build_runtime  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from tests.worker.gateway_process import GatewayProcess, free_port  # noqa: E402

TARGET_MS = 200  # from the job's end to the wait returning
SPEC = {"name": "one-second", "executable": "sh",
        "args": ["-c", "sleep 1; date +%s.%N"]}


def stats(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered) * 1000, 1),
            "max_ms": round(ordered[-1] * 1000, 1)} if ordered else {"n": 0}


def run(jobs: int, worker_poll: float) -> dict[str, dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="gridgate-bench-") as tmp:
        base = Path(tmp)
        port = free_port()
        settings = Settings(data_dir=base / "data", public_url=f"http://127.0.0.1:{port}")
        runtime = build_runtime(settings)
        _, token = researcher_token(runtime)
        runtime.close()
        gateway = GatewayProcess({"GRIDGATE_DATA_DIR": str(settings.data_dir),
                                  "GRIDGATE_PUBLIC_URL": settings.public_url,
                                  "GRIDGATE_PORT": str(port),
                                  "GRIDGATE_WORKER_POLL_SECONDS": str(worker_poll)},
                                 base / "gateway.log", args=("--log-level", "warning"))
        gateway.start()
        try:
            gateway.wait_healthy()
            gaps: dict[str, list[float]] = {"stream": [], "poll_1s": []}
            with GatewayClient(gateway.url, lambda: token) as client:
                for index in range(jobs):
                    way = "stream" if index % 2 == 0 else "poll_1s"
                    job_id = client.submit(SPEC)["id"]
                    if way == "stream":
                        job = client.wait(job_id)
                    else:
                        job = poll_for_state(client, job_id, FINAL_STATES, None, None, 1.0)
                    returned = time.time()
                    assert job["state"] == "COMPLETED", job
                    ended = float(client.output(job_id).data.decode().strip())
                    gaps[way].append(returned - ended)
        finally:
            gateway.stop()
    return {way: stats(values) for way, values in gaps.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=20)
    jobs = parser.parse_args().jobs
    series = {f"worker_poll_{poll:g}s": run(jobs, poll) for poll in (1.0, 0.1)}
    print(json.dumps({
        "jobs_per_series": jobs, "database": "sqlite",
        "job_end_to_wait_return": series, "target_ms": TARGET_MS,
        "held_at_default_worker_poll":
            series["worker_poll_1s"]["stream"].get("p50_ms", 1e9) <= TARGET_MS}, indent=2))


if __name__ == "__main__":
    main()
