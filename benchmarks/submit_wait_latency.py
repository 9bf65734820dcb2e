"""`gridgate submit --wait` of a 1-second job through the real CLI: from the job's end (the
local runner's recorded `ended_at`, result.json) to the CLI's return, on the event stream
against polling, in the same run (prints JSON; not a test). Issue 29, target 2: within
200 ms.

A `gridgate serve` (SQLite, its worker in the same process, the local site, the default
`worker_poll_seconds` unless --worker-poll) runs the jobs. Two service users submit in
turn: one waits on the stream; the other holds its one allowed stream open
(`output_max_streams_per_user=1`), so its CLI is refused the stream (429) and polls, the
client's own fallback (every 0.2 s at first, doubling up to 2 s).

    .venv/bin/python benchmarks/submit_wait_latency.py [--jobs 10] [--worker-poll 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from gateway.auth.accounts import create_client  # noqa: E402
from gateway.client.credentials import CredentialStore  # noqa: E402
from gateway.db.engine import transaction  # noqa: E402
from gateway.runtime import build_runtime  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from tests.worker.gateway_process import GatewayProcess, free_port  # noqa: E402

TARGET_MS = 200
GRIDGATE = [sys.executable, "-m", "gateway.cli.main"]


def stats(values: list[float]) -> dict[str, Any]:
    ordered = sorted(values)
    if not ordered:
        return {"n": 0}
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return {"n": len(ordered), "p50_ms": round(statistics.median(ordered) * 1000, 1),
            "p90_ms": round(p90 * 1000, 1), "max_ms": round(ordered[-1] * 1000, 1)}


def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GRIDGATE, *args], env=env, capture_output=True, text=True,
                          check=True)


def login(url: str, base: Path, name: str, client_id: str, secret: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRIDGATE_URL": url,
           "GRIDGATE_CONFIG_DIR": str(base / name)}
    (base / f"{name}.secret").write_text(secret + "\n")
    cli(env, "login", "--client-id", client_id, "--client-secret-file",
        str(base / f"{name}.secret"))
    return env


def hold_stream(url: str, env: dict[str, str], opened: threading.Event,
                stop: threading.Event) -> None:
    """Take this user's one stream slot until `stop`."""
    store = CredentialStore(Path(env["GRIDGATE_CONFIG_DIR"]) / "credentials.json")
    creds = store.load()
    assert creds is not None
    headers = {"Authorization": f"Bearer {creds.access_token}"}
    with httpx.Client(base_url=url, timeout=None) as client, \
            client.stream("GET", "/api/v1/events", headers=headers) as response:
        assert response.status_code == 200, response.status_code
        opened.set()
        stop.wait()


def run(jobs: int, worker_poll: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gridgate-bench-") as tmp:
        base = Path(tmp)
        port = free_port()
        settings = Settings(data_dir=base / "data", public_url=f"http://127.0.0.1:{port}")
        runtime = build_runtime(settings)
        with transaction(runtime.sessions) as session:
            clients = {name: create_client(session, name, ["jobs:read", "jobs:write"],
                                           ["client_credentials"])
                       for name in ("streamer", "poller")}
            ids = {name: (c.client_id, secret) for name, (c, secret) in clients.items()}
        runtime.close()
        gateway = GatewayProcess({"GRIDGATE_DATA_DIR": str(settings.data_dir),
                                  "GRIDGATE_PUBLIC_URL": settings.public_url,
                                  "GRIDGATE_PORT": str(port),
                                  "GRIDGATE_OUTPUT_MAX_STREAMS_PER_USER": "1",
                                  "GRIDGATE_WORKER_POLL_SECONDS": str(worker_poll)},
                                 base / "gateway.log", args=("--log-level", "warning"))
        gateway.start()
        stop = threading.Event()
        try:
            gateway.wait_healthy()
            envs = {name: login(gateway.url, base, name, *ids[name]) for name in ids}
            opened = threading.Event()
            holder = threading.Thread(target=hold_stream, daemon=True,
                                      args=(gateway.url, envs["poller"], opened, stop))
            holder.start()
            assert opened.wait(60), "the poller's stream did not open"
            gaps: dict[str, list[float]] = {"stream": [], "poll": []}
            seen: set[Path] = set()
            for index in range(jobs * 2):
                way, user = ("stream", "streamer") if index % 2 == 0 else ("poll", "poller")
                cli(envs[user], "submit", "--exe", "sh", "--site", "local", "--wait",
                    "--quiet", "--", "-c", "sleep 1")
                returned = time.time()
                results = set(settings.data_dir.rglob("result.json")) - seen
                assert len(results) == 1, results
                seen |= results
                ended = json.loads(results.pop().read_text())["ended_at"]
                gaps[way].append(returned - datetime.fromisoformat(ended).timestamp())
        finally:
            stop.set()
            gateway.stop()
    return {way: stats(values) for way, values in gaps.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=10, help="runs per way")
    parser.add_argument("--worker-poll", type=float, default=1.0)
    args = parser.parse_args()
    result = run(args.jobs, args.worker_poll)
    print(json.dumps({
        "jobs_per_way": args.jobs, "database": "sqlite", "worker_poll_seconds":
        args.worker_poll, "job_end_to_cli_return": result, "target_ms": TARGET_MS,
        "held": result["stream"].get("p90_ms", 1e9) <= TARGET_MS}, indent=2))


if __name__ == "__main__":
    main()
