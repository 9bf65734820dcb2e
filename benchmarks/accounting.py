"""The bank's cost, on PostgreSQL (prints JSON; not a test).

1. Submissions per second through the API (`wrk`, 16 clients) with the bank on (quote,
   balance check and lien in the submit's own transaction) against the same gateway
   with the bank off, measured in the same run, alternating off/on rounds so a noisy
   neighbour hits both alike; from 16 projects in turn, and from one project (whose one
   allocation row every lien updates: the worst case). Targets, on the 16 projects:
   on >= 0.8 x off, and on >= 300/s.
2. Settling 10,000 usage records as the worker does (batches of SETTLE_BATCH jobs per unit
   of work: liens locked, records stored, charges, refunds and releases posted), against
   a baseline in the same run: inserting the same 10,000 records as plain rows with one
   executemany and nothing else. Target: under 5 s.

    .venv/bin/python benchmarks/accounting.py [--seconds 4] [--rounds 5] [--records 10000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
from sqlalchemy import insert, select  # noqa: E402

from adapters.base import NativeState  # noqa: E402
from adapters.usage import UsageRecord  # noqa: E402
from benchmarks.api_throughput import ensure_wrk, own_cpu_group, wrk  # noqa: E402
from gateway.accounting.units import milli  # noqa: E402
from gateway.auth.accounts import create_local_user  # noqa: E402
from gateway.auth.tokens import issue_access_token  # noqa: E402
from gateway.db.bank_models import UsageRow  # noqa: E402
from gateway.db.engine import transaction  # noqa: E402
from gateway.db.models import Job, Project  # noqa: E402
from gateway.runtime import Runtime, build_runtime  # noqa: E402
from gateway.services.money import allocations, bank, settlement  # noqa: E402
from gateway.services.money.allocations import Grant  # noqa: E402
from gateway.services.money.bank import Payer  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from tests.pg import start_postgres  # noqa: E402
from tests.worker.gateway_process import GatewayProcess, free_port  # noqa: E402

SPEC = {"name": "bench", "executable": "/bin/true"}
CLIENTS = 16
PROJECTS = 16
TARGETS = {"submit_ratio_min": 0.8, "submit_per_s_min": 300, "settle_10k_seconds_max": 5.0}


def _user(runtime: Runtime, name: str) -> tuple[str, str, Project]:
    with transaction(runtime.sessions) as session:
        user = create_local_user(session, name, "bench-password-1")
        project = session.scalar(select(Project).where(Project.personal_owner_id == user.id))
        assert project is not None
        session.expunge(project)
        user_id = user.id
    token = issue_access_token(runtime.settings, runtime.keys, subject=user_id,
                               client_id="bench", scope="jobs:read jobs:write",
                               username=name).token
    return user_id, token, project


def _grant(runtime: Runtime, project: str, su: float) -> None:
    now = datetime.now(UTC)
    with transaction(runtime.sessions) as session:
        allocations.grant(session, Grant(project, "*", milli(su), now - timedelta(days=1),
                                         now + timedelta(days=365)), {"local"}, "bench",
                          "benchmark", now)


def submissions(base: Path, db_url: str, seconds: float, rounds: int) -> dict[str, Any]:
    """Submit throughput with the bank off and on, alternating rounds, for two loads:
    every request from one project (one allocation row takes every lien: the worst case)
    and requests from PROJECTS projects in turn (a federation's usual load)."""
    binary = ensure_wrk()
    settings = Settings(data_dir=base / "data", database_url=db_url,
                        public_url="http://127.0.0.1", run_worker=False)
    runtime = build_runtime(settings)
    tokens = []
    for i in range(PROJECTS):
        _, token, project = _user(runtime, f"submitter{i}")
        _grant(runtime, project.name, 1e9)  # never the limit: this measures the bank's cost
        tokens.append(token)
    runtime.close()
    loads = {"one_project": tuple(tokens[:1]), "many_projects": tuple(tokens)}
    per_s: dict[str, dict[str, list[float]]] = {
        load: {"off": [], "on": []} for load in loads}
    for _ in range(rounds):
        for mode in ("off", "on"):
            port = free_port()
            gateway = GatewayProcess({
                "GRIDGATE_DATA_DIR": str(settings.data_dir), "GRIDGATE_DATABASE_URL": db_url,
                "GRIDGATE_PUBLIC_URL": settings.public_url, "GRIDGATE_PORT": str(port),
                "GRIDGATE_RUN_WORKER": "false", "GRIDGATE_API_THREADS": "4",
                "GRIDGATE_ALLOCATIONS_ENFORCED": "true" if mode == "on" else "false",
            }, base / f"gateway-{mode}.log", args=("--log-level", "warning", "--processes", "2"))
            gateway.start()
            try:
                url = f"{gateway.url}/api/v1/jobs"
                body = json.dumps(SPEC)
                first = httpx.post(url, content=body, timeout=10, headers={
                    "Authorization": f"Bearer {tokens[0]}", "Content-Type": "application/json"})
                assert first.status_code == 202, first.text
                for load, used in loads.items():
                    wrk(binary, url, CLIENTS, 1, method="POST", body=body, tokens=used)  # warm
                    result = wrk(binary, url, CLIENTS, seconds, method="POST", body=body,
                                 tokens=used)
                    assert result["errors"] == 0, result
                    per_s[load][mode].append(result["per_s"])
            finally:
                gateway.stop()
    report: dict[str, Any] = {"clients": CLIENTS, "projects": PROJECTS,
                              "seconds_per_round": seconds}
    for load, modes in per_s.items():
        off, on = statistics.median(modes["off"]), statistics.median(modes["on"])
        # Each round's on over the same round's off: a neighbour's load hits both halves
        # of a pair alike, so the median of paired ratios is steadier than a ratio of
        # medians on a shared machine.
        paired = [b / a for a, b in zip(modes["off"], modes["on"], strict=True)]
        report[load] = {"rounds": modes, "median_per_s_off": off, "median_per_s_on": on,
                        "ratio_on_vs_off": round(statistics.median(paired), 3),
                        "paired_ratios": [round(r, 3) for r in paired]}
    return report


def settling(base: Path, db_url: str, records: int) -> dict[str, Any]:
    """Time settling `records` usage records the way the worker does, and the baseline."""
    settings = Settings(data_dir=base / "data2", database_url=db_url,
                        public_url="http://127.0.0.1", run_worker=False,
                        allocations_enforced=True)
    runtime = build_runtime(settings)
    user_id, _, project = _user(runtime, "settler")
    _grant(runtime, project.name, records * 10)
    now = datetime.now(UTC)
    payer = Payer(project.id, project.name)
    job_ids = [str(uuid.uuid4()) for _ in range(records)]
    # Set up (not timed): finished jobs, each holding a 1-SU lien at the local site.
    for start in range(0, records, 1000):
        with transaction(runtime.sessions) as session:
            session.execute(insert(Job), [
                {"id": j, "owner_id": user_id, "project_id": project.id, "name": "b",
                 "spec": {"resources": {"walltime": 3600}}, "state": "COMPLETED",
                 "site_name": "local", "created_at": now, "updated_at": now,
                 "ended_at": now} for j in job_ids[start:start + 1000]])
            for job_id in job_ids[start:start + 1000]:
                bank.hold(session, job_id, payer, "local", 1000, now, "bench")
    with runtime.sessions() as session:
        terms = settlement.terms(session, job_ids[:1])[job_ids[0]]

    def record(i: int) -> UsageRecord:
        return UsageRecord(f"b{i}", 0, NativeState.COMPLETED, None, 0, now,
                           now + timedelta(seconds=1800), 1800, 1, 1, "local",
                           f"b{i}|COMPLETED")

    began = time.perf_counter()
    for start in range(0, records, settlement.SETTLE_BATCH):
        batch = [settlement.ToSettle(job_ids[i], [record(i)], terms)
                 for i in range(start, min(records, start + settlement.SETTLE_BATCH))]
        with transaction(runtime.sessions) as session:
            settlement.settle_jobs(session, "local", batch, now, 0)
    settle_s = time.perf_counter() - began
    # Baseline: the same records stored as plain rows, one executemany, nothing else.
    began = time.perf_counter()
    with transaction(runtime.sessions) as session:
        session.execute(insert(UsageRow), [
            {"site_name": "local", "native_id": f"c{i}", "run": 0, "job_id": job_ids[i],
             "source": "local", "received_at": now, "elapsed": 1800, "cores": 1,
             "nodes": 1, "state": "COMPLETED", "raw": f"c{i}|COMPLETED"}
            for i in range(records)])
    baseline_s = time.perf_counter() - began
    with runtime.sessions() as session:
        charged = session.scalar(select(UsageRow.charged_milli).where(
            UsageRow.native_id == "b0"))
    runtime.close()
    return {"records": records, "batch": settlement.SETTLE_BATCH,
            "settle_seconds": round(settle_s, 3),
            "baseline_plain_insert_seconds": round(baseline_s, 3),
            "records_per_s": round(records / settle_s), "charged_milli_each": charged}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()
    # As benchmarks/api_throughput.py: PostgreSQL and the gateway in a CPU cgroup of
    # their own when run as root (see the README on autogroup).
    with own_cpu_group() as cpu_group, tempfile.TemporaryDirectory(
            prefix="gridgate-bench-") as tmp:
        base = Path(tmp)
        pg = start_postgres(base / "pg")
        try:
            submit = submissions(base, pg.create_database("submit"), args.seconds, args.rounds)
            settle = settling(base, pg.create_database("settle"), args.records)
        finally:
            pg.stop()
    print(json.dumps({
        "benchmark": "accounting", "database": "postgresql", "cpu_group": cpu_group,
        "submissions": submit,
        "settlement": settle, "targets": TARGETS,
        # Judged on the many-projects load; one_project is the worst case, shown beside.
        "met": {
            "submit_ratio": submit["many_projects"]["ratio_on_vs_off"]
            >= TARGETS["submit_ratio_min"],
            "submit_per_s": submit["many_projects"]["median_per_s_on"]
            >= TARGETS["submit_per_s_min"],
            "settle_10k": settle["settle_seconds"] <= TARGETS["settle_10k_seconds_max"],
        }}, indent=2))


if __name__ == "__main__":
    main()
