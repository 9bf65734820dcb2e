"""Workflows: readiness of a 10,000-step DAG, and the scheduling overhead of a workflow
against the same jobs submitted one by one with the same dependencies (prints JSON).

1. Readiness (pure, `workflows.readiness.advance`) of two 10,000-instance DAGs, with a
   third of the instances completed, a third running and the rest pending:
   - sparse: 10,000 steps, each needing 1 to 3 earlier ones (seeded);
   - layered: 100 steps of a 100-value matrix, each step needing the one before (every
     instance waits for all 100 of the previous layer: a million edges).
   Target (issue 16): under 100 ms.
2. Overhead, through one gateway (API in this process over TestClient, one Worker thread
   polling every 0.05 s, SQLite, the local site): a workflow of LAYERS steps of WIDTH
   instances of /bin/true (a matrix), each layer needing the one before, from the POST to
   the last step done; against the same LAYERS x WIDTH jobs posted one by one, each
   `depends_on` (afterok) every job of the layer before, from the first POST to the last
   job's end. WIDTH is at most 64 (a plain job's dependency limit). Target: at most 1.2x.

    .venv/bin/python benchmarks/workflows.py [--layers 20 --width 50] [--skip-run]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402

from gateway.api.app import create_app  # noqa: E402
from gateway.auth.accounts import create_local_user  # noqa: E402
from gateway.auth.tokens import issue_access_token  # noqa: E402
from gateway.db.engine import transaction  # noqa: E402
from gateway.runtime import build_runtime  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from gateway.worker.loop import Worker  # noqa: E402
from workflows.limits import Limits  # noqa: E402
from workflows.plan import plan_workflow  # noqa: E402
from workflows.readiness import StepState, advance  # noqa: E402

TARGET_READINESS_MS = 100.0
TARGET_RATIO = 1.2
BIG = Limits(max_steps=20_000, max_matrix=20_000, max_instances=20_000)
TRUE = {"executable": "/bin/true", "site": "local"}


def _states(ids: tuple[str, ...]) -> dict[str, StepState]:
    third = len(ids) // 3
    return {i: (StepState.COMPLETED if k < third else
                StepState.RUNNING if k < 2 * third else StepState.PENDING)
            for k, i in enumerate(ids)}


def _time_advance(spec: dict[str, Any], rounds: int = 7) -> dict[str, Any]:
    started = time.perf_counter()
    plan = plan_workflow(spec, BIG)
    plan_ms = (time.perf_counter() - started) * 1000
    states = _states(plan.ids)
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        moves = advance(plan, states)
        times.append((time.perf_counter() - t0) * 1000)
    return {"instances": len(plan.ids), "edges": sum(len(i.needs) for i in plan.instances),
            "plan_ms": round(plan_ms, 1), "advance_ms_median": round(statistics.median(times), 2),
            "advance_ms_max": round(max(times), 2), "submit_now": len(moves.submit),
            "target_ms": TARGET_READINESS_MS,
            "met": statistics.median(times) < TARGET_READINESS_MS}


def readiness() -> dict[str, Any]:
    rng = random.Random(16)
    sparse: dict[str, Any] = {"s0": {"job": TRUE}}
    for k in range(1, 10_000):
        needs = sorted({f"s{rng.randrange(max(0, k - 200), k)}" for _ in range(rng.randint(1, 3))})
        sparse[f"s{k}"] = {"job": TRUE, "needs": needs}
    layered: dict[str, Any] = {}
    for k in range(100):
        layered[f"l{k}"] = {"job": TRUE, "matrix": {"i": list(range(100))},
                            "needs": [f"l{k - 1}"] if k else []}
    return {"sparse": _time_advance({"name": "sparse", "steps": sparse}),
            "layered": _time_advance({"name": "layered", "steps": layered})}


class Gateway:
    """One gateway: the API over TestClient, one worker thread."""

    def __init__(self, data: Path) -> None:
        self.settings = Settings(data_dir=data, database_url=f"sqlite:///{data}/gw.db",
                                 run_worker=False, worker_poll_seconds=0.05,
                                 public_url="http://bench.test", local_site_max_jobs=64,
                                 workflow_max_instances=20_000)
        self.runtime = build_runtime(self.settings)
        self.client = TestClient(create_app(runtime=self.runtime), client=("127.0.0.1", 5000))
        self.client.__enter__()
        with transaction(self.runtime.sessions) as session:
            user = create_local_user(session, "bench", "correct horse battery", ("researcher",))
            user_id = user.id
        token = issue_access_token(self.settings, self.runtime.keys, subject=user_id,
                                   client_id="bench", scope="jobs:read jobs:write sites:read",
                                   username="bench").token
        self.headers = {"Authorization": f"Bearer {token}"}
        self.stop = threading.Event()
        self.worker = threading.Thread(target=Worker(self.runtime).run, args=(self.stop,),
                                       daemon=True)
        self.worker.start()

    def close(self) -> None:
        self.stop.set()
        self.worker.join()
        self.client.__exit__(None, None, None)
        self.runtime.close()

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        r = self.client.post(path, json=body, headers=self.headers)
        if r.status_code != 202:
            raise SystemExit(f"{path}: {r.status_code} {r.text[:500]}")
        found: dict[str, Any] = r.json()
        return found

    def get(self, path: str, **params: Any) -> dict[str, Any]:
        r = self.client.get(path, params=params, headers=self.headers)
        r.raise_for_status()
        found: dict[str, Any] = r.json()
        return found


def _workflow_run(gw: Gateway, layers: int, width: int) -> float:
    steps = {f"l{k}": {"job": TRUE, "matrix": {"i": list(range(width))},
                       "needs": [f"l{k - 1}"] if k else []} for k in range(layers)}
    started = time.monotonic()
    wf = gw.post("/api/v1/workflows", {"name": "bench", "steps": steps})
    while gw.get(f"/api/v1/workflows/{wf['id']}")["state"] == "running":
        time.sleep(0.1)
    elapsed = time.monotonic() - started
    found = gw.get(f"/api/v1/workflows/{wf['id']}")
    if found["state"] != "completed":
        raise SystemExit(f"the workflow ended {found['state']}: {found['step_states']}")
    return elapsed


def _jobs_run(gw: Gateway, layers: int, width: int) -> float:
    started = time.monotonic()
    previous: list[str] = []
    last: list[str] = []
    for k in range(layers):
        depends = [{"job": j, "when": "afterok"} for j in previous]
        last = [gw.post("/api/v1/jobs", {**TRUE, "name": f"l{k}-{i}", "depends_on": depends})
                ["id"] for i in range(width)]
        previous = last
    while any(gw.get(f"/api/v1/jobs/{j}")["state"] not in ("COMPLETED", "FAILED", "CANCELLED")
              for j in last):
        time.sleep(0.1)
    elapsed = time.monotonic() - started
    states = {gw.get(f"/api/v1/jobs/{j}")["state"] for j in last}
    if states != {"COMPLETED"}:
        raise SystemExit(f"the last layer ended {states}")
    return elapsed


def overhead(layers: int, width: int) -> dict[str, Any]:
    results: dict[str, Any] = {"layers": layers, "width": width, "steps": layers * width}
    for name, run in (("jobs_seconds", _jobs_run), ("workflow_seconds", _workflow_run)):
        with tempfile.TemporaryDirectory() as tmp:
            gw = Gateway(Path(tmp))
            try:
                results[name] = round(run(gw, layers, width), 2)
            finally:
                gw.close()
    results["ratio"] = round(results["workflow_seconds"] / results["jobs_seconds"], 3)
    results["target_ratio"] = TARGET_RATIO
    results["met"] = results["ratio"] <= TARGET_RATIO
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--layers", type=int, default=20)
    parser.add_argument("--width", type=int, default=50)
    parser.add_argument("--skip-run", action="store_true", help="Readiness only.")
    args = parser.parse_args()
    if not 1 <= args.width <= 64:
        parser.error("--width: 1 to 64 (a plain job depends on at most 64 jobs)")
    report: dict[str, Any] = {"readiness": readiness()}
    if not args.skip_run:
        report["overhead"] = overhead(args.layers, args.width)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
