"""A 100-task workflow through gridgate's GA4GH TES against the same tasks submitted
natively, on the live testbed (prints JSON; not a test; needs root). Issue 30's target:
the scheduling overhead of the TES workflow within 10% of the native makespan.

Brings up its own testbed (its container sites: roadrunner, Slurm; galaxy, Grid Engine) and
test registry, and a gateway over them. Snakemake 9 (its TES executor, installed by
tests/run.sh) runs a scatter of `--tasks` rules (each a TES task: Snakemake inside the
task image copies nothing in, writes one line to its output in the `fs` storage, as in
tests/api/tes/test_snakemake_live.py), submitting them as fast as its default limit
allows (10 a second) and following them every `--check` seconds. The native run then
posts the very job specs those tasks became (`POST /api/v1/jobs`, same owner, same
scripts) at the same rate, and follows them on the same schedule.

Makespan: from the first task's creation to the last one's end, as the gateway recorded
them (what the gateway's scheduling decides; the engine's own checks only delay when it
notices), for both runs; the engine's wall time is reported beside it. Before both, each
site gets the image once (a pinned job), so neither run pays its first shipping.

    python3 benchmarks/tes_workflow.py [--tasks 100] [--check 5]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.api.tes.snakemake_engine import (  # noqa: E402
    federation_area,
    push_snakemake_image,
    start_engine,
    user_token,
)
from tests.client.live import serve_gateway  # noqa: E402
from tests.registry.fixture import running_registry  # noqa: E402
from tests.testbed.fixture import running_testbed, session_config  # noqa: E402

SITES = ("roadrunner", "galaxy")  # the testbed sites with a container runtime
TARGET_RATIO = 1.10
FINAL = ("COMPLETED", "FAILED", "CANCELLED")
RATE_PER_S = 10.0  # Snakemake's default --max-jobs-per-second


def scatter(tasks: int) -> str:
    """A Snakefile of `tasks` independent rules' instances and a local gather."""
    return (f'N = range({tasks})\n\n'
            'rule all:\n    input: expand("out/{i}.txt", i=N)\n\n'
            'rule work:\n    output: "out/{i}.txt"\n'
            '    shell: "echo {wildcards.i} > {output}"\n')


def span(jobs: list[dict[str, Any]]) -> float:
    """Seconds from the first job's creation to the last one's end."""
    return (max(datetime.fromisoformat(j["ended_at"]) for j in jobs)
            - min(datetime.fromisoformat(j["created_at"]) for j in jobs)).total_seconds()


def by_site(jobs: list[dict[str, Any]]) -> dict[str, int]:
    """How many of `jobs` ran at each site."""
    return dict(Counter(str(j["site"]) for j in jobs))


def listed(http: httpx.Client, **params: str) -> list[dict[str, Any]]:
    """Every job of the caller that `params` select (all pages)."""
    found: list[dict[str, Any]] = []
    cursor = None
    while True:
        query = {**params, "limit": "500", **({"cursor": cursor} if cursor else {})}
        page = http.get("/api/v1/jobs", params=query).json()
        found += page["items"]
        cursor = page["next_cursor"]
        if not cursor:
            return found


def follow(http: httpx.Client, ids: set[str], check: float, deadline: float) -> None:
    """Wait until every job of `ids` ended, looking every `check` seconds."""
    end = time.monotonic() + deadline
    while True:
        states = {j["id"]: j["state"] for j in listed(http) if j["id"] in ids}
        if len(states) == len(ids) and all(s in FINAL for s in states.values()):
            return
        if time.monotonic() > end:
            raise RuntimeError(f"jobs still running after {deadline:.0f} s")
        time.sleep(check)


def warm(http: httpx.Client, image: str, check: float) -> None:
    """Ship the image to every site once (a pinned container job each)."""
    ids = set()
    for site in SITES:
        r = http.post("/api/v1/jobs", json={
            "name": "warm", "site": site, "executable": "/bin/sh", "args": ["-c", "true"],
            "container": {"image": f"docker://{image}"}, "resources": {"walltime": 600}})
        r.raise_for_status()
        ids.add(r.json()["id"])
    follow(http, ids, check, 900)


def native(http: httpx.Client, specs: list[dict[str, Any]], check: float) -> list[dict[str, Any]]:
    """Post `specs` at the engine's rate, follow them; the jobs as they ended."""
    ids = set()
    for spec in specs:
        started = time.monotonic()
        r = http.post("/api/v1/jobs", json={**spec, "name": spec["name"] + "-native"})
        r.raise_for_status()
        ids.add(r.json()["id"])
        time.sleep(max(0.0, 1 / RATE_PER_S - (time.monotonic() - started)))
    follow(http, ids, check, 3600)
    return [j for j in listed(http) if j["id"] in ids]


def keep_archive(storage: Path, engine: subprocess.Popen[str]) -> Path:
    """A second link (`.kept`) to the source archive the engine uploads to `storage`; the
    archive's path."""
    while engine.poll() is None:
        found = list(storage.glob("snakemake-workflow-sources.*.tar.xz"))
        if found:
            os.link(found[0], storage / ".kept")
            return found[0]
        time.sleep(0.05)
    raise RuntimeError(f"snakemake ended first:\n{engine.stdout.read() if engine.stdout else ''}")


def bench(tasks: int, check: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="tes-workflow-"))
    (work / "registry").mkdir()
    with running_testbed(session_config()) as tb, running_registry(work / "registry") as reg, \
            federation_area() as area:
        configs = work / "site-configs"
        configs.mkdir()
        for name in SITES:
            (configs / f"{name}.yaml").write_bytes(
                (Path(tb.site_configs) / f"{name}.yaml").read_bytes())
        image = push_snakemake_image(reg, work / "root")
        with serve_gateway(work / "gw", site_configs_dir=configs, local_site_enabled=False,
                           insecure_registries=reg.host,
                           file_url_dirs=f"{area}/{{user}}") as gw:
            token = user_token(gw.runtime, "ada")
            with httpx.Client(base_url=gw.url, timeout=60,
                              headers={"Authorization": f"Bearer {token}"}) as http:
                warm(http, image, check)
                started = time.monotonic()
                engine = start_engine(gw.url, token, image, area / "ada", scatter(tasks),
                                      ["--jobs", str(tasks), "--seconds-between-status-checks",
                                       str(check)])
                # The engine deletes its source archive (which every task script unpacks) when
                # it ends: a second link keeps it for the native run.
                storage = area / "ada/storage"
                archive = keep_archive(storage, engine)
                output, _ = engine.communicate(timeout=3600)
                engine_wall = time.monotonic() - started
                if engine.returncode != 0:
                    raise RuntimeError(f"snakemake failed:\n{output[-4000:]}")
                tes_jobs = listed(http, origin="tes")
                os.link(storage / ".kept", archive)
                native_jobs = native(http, [j["spec"] for j in tes_jobs], check)
    tes_span, native_span = span(tes_jobs), span(native_jobs)
    ratio = tes_span / native_span
    return {
        "tasks": tasks, "sites": list(SITES), "check_s": check,
        "tes": {"makespan_s": round(tes_span, 1), "engine_wall_s": round(engine_wall, 1),
                "completed": sum(j["state"] == "COMPLETED" for j in tes_jobs),
                "by_site": by_site(tes_jobs)},
        "native": {"makespan_s": round(native_span, 1),
                   "completed": sum(j["state"] == "COMPLETED" for j in native_jobs),
                   "by_site": by_site(native_jobs),
                   "reasons": sorted({str(j["reason"]) for j in native_jobs
                                      if j["state"] != "COMPLETED"})},
        "ratio": round(ratio, 3), "target_ratio_max": TARGET_RATIO,
        "met": ratio <= TARGET_RATIO, "loadavg_after": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--check", type=int, default=5,
                        help="seconds between status checks, the engine's and the native run's")
    args = parser.parse_args()
    print(json.dumps(bench(args.tasks, args.check), indent=2))


if __name__ == "__main__":
    main()
