"""The portal's targets (issue 31), measured on PostgreSQL with 100,000 jobs (prints JSON;
not a test):

- `server_ms`: what the jobs page costs the server, per request over HTTP on loopback
  (p50/p95 of --requests each): the page itself (`/portal/jobs`) and each API read its
  script makes (the first page of jobs, filtered by state, project, name and time, and a
  page deep in the list by cursor). Target: p95 <= 50 ms. Baselines in the same run:
  GET /api/v1/health (the HTTP stack doing nothing) and the first page's SQL alone
  (psycopg, no HTTP).
- `first_contentful_paint_ms`: each page in headless Chromium (median of --paints fresh
  loads, cache warm). Target: <= 500 ms. Baseline: the same browser painting the health
  JSON (a page with no script or style).
- `page_weight_kb`: HTML + JS + CSS of each page as transferred (gzip where the gateway
  compresses). Target: <= 150 KB.
- `event_to_row_ms`: a job's state change (a hold or release, committed here as the worker
  would commit one) until an open jobs page shows it in the job's row (a MutationObserver
  in the page), p50/p99 over --events changes. Target: p99 <= 1,000 ms. Baseline: the
  same commits seen by a raw SSE client (the stream, no browser).

    .venv/bin/python benchmarks/portal.py [--jobs 100000] [--events 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402
import psycopg  # noqa: E402
from playwright.sync_api import Browser, sync_playwright  # noqa: E402
from sqlalchemy import select, text  # noqa: E402

from gateway.api.portal import session as portal_session  # noqa: E402
from gateway.auth.accounts import create_local_user  # noqa: E402
from gateway.auth.tokens import issue_access_token  # noqa: E402
from gateway.db.engine import transaction  # noqa: E402
from gateway.db.models import Project  # noqa: E402
from gateway.domain.principal import Principal  # noqa: E402
from gateway.runtime import build_runtime  # noqa: E402
from gateway.services.jobs import holds  # noqa: E402
from gateway.settings import Settings  # noqa: E402
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from tests.pg import start_postgres  # noqa: E402
from tests.worker.gateway_process import GatewayProcess, free_port  # noqa: E402

TARGETS = {"server_p95_ms_max": 50, "first_contentful_paint_ms_max": 500,
           "page_weight_kb_max": 150, "event_to_row_p99_ms_max": 1000}
STATES = ["COMPLETED", "COMPLETED", "COMPLETED", "FAILED", "CANCELLED", "RUNNING", "QUEUED",
          "ACCEPTED"]
# Job g: created (n - g) minutes before now; its state, site and name vary with g.
LOAD = """
    INSERT INTO jobs (id, owner_id, project_id, name, spec, state, site_name, cancel_requested,
                      held, created_at, updated_at, started_at, ended_at)
    SELECT md5('bench' || g)::uuid::text, :owner, :project,
           'sim-' || (g % 97) || '-' || g, '{"name": "bench"}',
           (CAST(:states AS text[]))[1 + g % 8],
           CASE WHEN g % 8 = 7 THEN NULL ELSE 'local' END, false, false,
           :now - (:n - g) * interval '1 minute', :now - (:n - g) * interval '1 minute',
           NULL, NULL
    FROM generate_series(1, :n) g"""


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {"p50": at(0.5), "p95": at(0.95), "p99": at(0.99), "max": round(ordered[-1], 2),
            "n": len(ordered)}


def timed_get(client: httpx.Client, url: str, requests: int, **kwargs: Any) -> dict[str, float]:
    client.get(url, **kwargs).raise_for_status()  # warm
    samples = []
    for _ in range(requests):
        began = time.perf_counter()
        client.get(url, **kwargs).raise_for_status()
        samples.append((time.perf_counter() - began) * 1000)
    return percentiles(samples)


def server_times(base: str, token: str, db_url: str, owner: str, project: str,
                 requests: int) -> dict[str, Any]:
    api = f"{base}/api/v1/jobs"
    month_ago = (datetime.now(UTC) - timedelta(days=30)).isoformat()
    reads = {
        "first_page": {"limit": 50},
        "state_running": {"limit": 50, "state": "RUNNING"},
        "project": {"limit": 50, "project": project},
        "name_glob": {"limit": 50, "name_glob": "sim-42-*"},
        "last_30_days_oldest_first": {"limit": 50, "created_after": month_ago,
                                      "order": "oldest"},
    }
    out: dict[str, Any] = {}
    with httpx.Client(timeout=60, headers={"Authorization": f"Bearer {token}"}) as client:
        out["baseline_health"] = timed_get(client, f"{base}/api/v1/health", requests)
        out["page_html"] = timed_get(client, f"{base}/portal/jobs", requests,
                                     cookies={portal_session.COOKIE: token})
        for name, params in reads.items():
            out[f"api_{name}"] = timed_get(client, api, requests, params=params)
        # Page 1,000 of 50: a cursor deep in the list.
        cursor, params = None, {"limit": 500}
        for _ in range(100):
            page = client.get(api, params={**params, **({"cursor": cursor} if cursor else {})})
            cursor = page.json()["next_cursor"]
        out["api_deep_page_by_cursor"] = timed_get(client, api, requests,
                                                   params={"limit": 50, "cursor": cursor})
    sql = ("SELECT * FROM jobs WHERE owner_id = %s ORDER BY created_at DESC, id DESC "
           "LIMIT 51")
    with psycopg.connect(db_url.replace("postgresql+psycopg://", "postgresql://")) as conn:
        samples = []
        for _ in range(requests + 1):
            began = time.perf_counter()
            conn.execute(sql, (owner,)).fetchall()
            samples.append((time.perf_counter() - began) * 1000)
        out["baseline_first_page_sql_only"] = percentiles(samples[1:])
    return out


PAINT = """() => new Promise((resolve) => {
  const found = () => performance.getEntriesByName("first-contentful-paint")[0];
  if (found()) { resolve(found().startTime); return; }
  new PerformanceObserver(() => { if (found()) resolve(found().startTime); })
    .observe({ type: "paint", buffered: true });
})"""
WEIGHT = """() => {
  const [nav] = performance.getEntriesByType("navigation");
  const assets = performance.getEntriesByType("resource")
    .filter((r) => r.initiatorType === "script" || r.initiatorType === "link"
                   || r.initiatorType === "other" && /\\.(js|css)/.test(r.name));
  return nav.encodedBodySize + assets.reduce((sum, r) => sum + r.encodedBodySize, 0);
}"""


def paints(browser: Browser, base: str, token: str, pages: dict[str, str],
           runs: int) -> tuple[dict[str, Any], dict[str, float]]:
    context = browser.new_context()
    context.add_cookies([{"name": portal_session.COOKIE, "value": token, "url": base}])
    page = context.new_page()
    fcp: dict[str, Any] = {}
    weight: dict[str, float] = {}
    try:
        for name, path in pages.items():
            samples = []
            for run in range(runs + 1):
                page.goto(f"{base}{path}", wait_until="load")
                if run == 0:
                    # The first load fetches the scripts (their weight); later ones hit the
                    # browser's cache, as a person's second page does.
                    page.wait_for_load_state("networkidle")
                    weight[name] = round(page.evaluate(WEIGHT) / 1024, 1)
                    continue
                samples.append(page.evaluate(PAINT))
            fcp[name] = round(statistics.median(samples), 1)
    finally:
        context.close()
    return fcp, weight


WATCH = """(jobId) => {
  window.__seen = {};
  const row = document.querySelector(`tr[data-job-id="${jobId}"]`);
  new MutationObserver(() => { window.__seen[row.dataset.eventId] = Date.now(); })
    .observe(row, { attributes: true, attributeFilter: ["data-event-id"] });
}"""


def sse_arrivals(base: str, token: str, job_id: str, seen: dict[str, float],
                 stop: threading.Event) -> None:
    """The baseline: the raw stream's arrival time of each event id."""
    with httpx.Client(timeout=None) as client, client.stream(
            "GET", f"{base}/api/v1/events", params={"job": job_id},
            headers={"Authorization": f"Bearer {token}"}) as response:
        for line in response.iter_lines():
            if line.startswith("id: "):
                seen[line[4:]] = time.time()
            if stop.is_set():
                return


def event_latency(browser: Browser, base: str, token: str, runtime: Any,
                  principal: Principal, events: int) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {token}"}
    job_id = httpx.post(f"{base}/api/v1/jobs", headers=headers, timeout=30,
                        json={"name": "watched", "executable": "/bin/true"}).json()["id"]
    with transaction(runtime.sessions) as session:
        holds.hold(session, principal, job_id)
    raw: dict[str, float] = {}
    stop = threading.Event()
    reader = threading.Thread(target=sse_arrivals, args=(base, token, job_id, raw, stop),
                              daemon=True)
    reader.start()
    context = browser.new_context()
    context.add_cookies([{"name": portal_session.COOKIE, "value": token, "url": base}])
    page = context.new_page()
    try:
        page.goto(f"{base}/portal/jobs")
        page.wait_for_selector(f"tr[data-job-id='{job_id}']")
        page.wait_for_function("document.getElementById('live').textContent.startsWith('Live')")
        page.evaluate(WATCH, job_id)
        committed: list[float] = []
        for index in range(events):
            change = holds.release if index % 2 == 0 else holds.hold
            with transaction(runtime.sessions) as session:
                change(session, principal, job_id)
            committed.append(time.time())
            time.sleep(0.15)
        time.sleep(2)
        seen: dict[str, float] = page.evaluate("window.__seen")
    finally:
        context.close()
        stop.set()
    with runtime.reading() as conn:
        ids = [str(i) for i in conn.execute(text(
            "SELECT id FROM events WHERE job_id = :j ORDER BY id"), {"j": job_id}).scalars()]
    ids = ids[-events:]
    row = [seen[i] - at * 1000 for at, i in zip(committed, ids, strict=True) if i in seen]
    stream = [(raw[i] - at) * 1000 for at, i in zip(committed, ids, strict=True) if i in raw]
    return {"row": percentiles(row), "missing_in_row": events - len(row),
            "baseline_raw_sse": percentiles(stream), "missing_in_stream": events - len(stream)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="gridgate-bench-") as tmp:
        base_dir = Path(tmp)
        pg = start_postgres(base_dir / "pg")
        gateway = None
        try:
            db_url = pg.create_database("bench")
            port = free_port()
            # The same public URL here and in the gateway: it is the tokens' issuer.
            settings = Settings(data_dir=base_dir / "data", database_url=db_url,
                                public_url=f"http://127.0.0.1:{port}", run_worker=False)
            gateway = GatewayProcess({
                "GRIDGATE_DATA_DIR": str(settings.data_dir), "GRIDGATE_DATABASE_URL": db_url,
                "GRIDGATE_PUBLIC_URL": settings.public_url, "GRIDGATE_PORT": str(port),
                "GRIDGATE_RUN_WORKER": "false",
            }, base_dir / "gateway.log", args=("--log-level", "warning"))
            gateway.start()
            gateway.wait_healthy()
            runtime = build_runtime(settings)
            with transaction(runtime.sessions) as session:
                user = create_local_user(session, "bench", "bench-password-1")
                project = session.scalar(select(Project).where(
                    Project.personal_owner_id == user.id))
                assert project is not None
                principal = Principal(user.id, user.issuer, user.subject, "bench",
                                      roles=frozenset({"researcher"}))
                project_id, project_name = project.id, project.name
            token = issue_access_token(settings, runtime.keys, subject=user.id,
                                       client_id="portal", scope=portal_session.SCOPE,
                                       username="bench").token
            began = time.perf_counter()
            with transaction(runtime.sessions) as session:
                session.execute(text(LOAD), {"owner": user.id, "project": project_id,
                                             "states": STATES, "n": args.jobs,
                                             "now": datetime.now(UTC)})
            with runtime.engine.connect().execution_options(
                    isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text("VACUUM ANALYZE jobs"))
            load_seconds = time.perf_counter() - began
            base = gateway.url
            server = server_times(base, token, db_url, user.id, project_name, args.requests)
            any_job = httpx.get(f"{base}/api/v1/jobs", params={"limit": 1}, timeout=30,
                                headers={"Authorization": f"Bearer {token}"}).json()
            pages = {"jobs": "/portal/jobs",
                     "job": f"/portal/jobs/{any_job['items'][0]['id']}",
                     "submit": "/portal/submit", "workflows": "/portal/workflows",
                     "sites": "/portal/sites", "login": "/portal/login",
                     "baseline_health_json": "/api/v1/health"}
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=CHROMIUM_ARGS)
                try:
                    fcp, weight = paints(browser, base, token, pages, args.paints)
                    latency = event_latency(browser, base, token, runtime, principal,
                                            args.events)
                finally:
                    browser.close()
            runtime.close()
            portal_pages = [p for p in pages if not p.startswith("baseline")]
            api_reads = [k for k in server if not k.startswith("baseline")]
            return {
                "database": "postgresql", "jobs": args.jobs,
                "load_seconds": round(load_seconds, 1), "load_average": os.getloadavg(),
                "server_ms": server, "first_contentful_paint_ms": fcp,
                "page_weight_kb": weight, "event_to_row_ms": latency, "targets": TARGETS,
                "held": {
                    "server_p95": all(server[k]["p95"] <= TARGETS["server_p95_ms_max"]
                                      for k in api_reads),
                    "first_contentful_paint": all(
                        fcp[p] <= TARGETS["first_contentful_paint_ms_max"]
                        for p in portal_pages),
                    "page_weight": all(weight[p] <= TARGETS["page_weight_kb_max"]
                                       for p in portal_pages),
                    "event_to_row_p99": latency["row"]["p99"]
                    <= TARGETS["event_to_row_p99_ms_max"] and latency["missing_in_row"] == 0,
                },
            }
        finally:
            if gateway is not None:
                gateway.stop()
            pg.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--paints", type=int, default=5)
    parser.add_argument("--events", type=int, default=200)
    print(json.dumps(run(parser.parse_args()), indent=2))


if __name__ == "__main__":
    main()
