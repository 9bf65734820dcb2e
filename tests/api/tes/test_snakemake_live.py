"""LIVE (testbed): a real workflow engine runs a multi-step workflow through gridgate's
GA4GH TES (issue 30, item 6): Snakemake 9 with its TES executor (installed by
tests/run.sh), three rules in a chain, each a TES task the gateway routes
between the testbed's Slurm site (roadrunner) and Grid Engine site (galaxy), runs with
ch-run in an image from the project's test registry, and charges to the owner's
project.

The engine moves the data itself through a directory of the federation's shared area
that it and the tasks see at one path, as the engine's account on that file system
(tests/api/tes/snakemake_engine.py).

Where each task runs is gridgate's choice, steered only by load, as the routing test
steers it: galaxy is busy when the first task comes (two jobs of another user hold its
two slots), so it goes to roadrunner, where it holds (a file the test writes) until
roadrunner is busy in turn (two jobs queued behind it) and galaxy idle; the next two go
to galaxy.

Why Snakemake: the other engines on the package index cannot run offline here (cwl-tes:
its PyJWT 2 refuses the gateway's tokens, which carry an audience, and it lacks its
`cryptography` dependency; Toil removed its TES batch system after 5.12; Nextflow's
nf-ga4gh plugin and Cromwell are not on a reachable registry; miniwdl has no TES
back end)."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from gateway.db.bank_models import LedgerEntry
from testbed.state import TestbedInfo
from tests.api.tes.snakemake_engine import (
    VENV,
    federation_area,
    push_snakemake_image,
    start_engine,
    user_token,
)
from tests.client.live import LiveGateway, serve_gateway
from tests.registry.fixture import Registry
from tests.waiting_jobs import waits

SITES = ("roadrunner", "galaxy")
FINAL = ("COMPLETED", "FAILED", "CANCELLED")

SNAKEFILE = """\
rule all:
    input: "results/summary.txt"

rule make:
    output: "results/raw.txt"
    params: go=config["go"]
    shell: "while [ ! -e {params.go} ]; do sleep 0.2; done; seq 1 5 > {output}"

rule square:
    input: "results/raw.txt"
    output: "results/squared.txt"
    shell: "awk '{{print $1 * $1}}' {input} > {output}"

rule summarize:
    input: "results/squared.txt"
    output: "results/summary.txt"
    shell: "awk '{{s += $1}} END {{print s}}' {input} > {output}"
"""


@pytest.fixture
def area() -> Iterator[Path]:
    with federation_area() as base:
        yield base


@pytest.fixture
def gateway(testbed: TestbedInfo, registry: Registry, area: Path,
            tmp_path: Path) -> Iterator[LiveGateway]:
    configs = tmp_path / "site-configs"
    configs.mkdir()
    for name in SITES:
        shutil.copy(Path(testbed.site_configs) / f"{name}.yaml", configs)
    with serve_gateway(tmp_path / "data", site_configs_dir=configs, local_site_enabled=False,
                       allocations_enforced=True, insecure_registries=registry.host,
                       file_url_dirs=f"{area}/{{user}}") as live:
        yield live


class Jobs:
    """The gateway's jobs API as one user."""

    def __init__(self, gateway: LiveGateway, token: str) -> None:
        self.http = httpx.Client(base_url=gateway.url, timeout=30,
                                 headers={"Authorization": f"Bearer {token}"})

    def hold(self, site: str, go: Path) -> str:
        """A job at `site` that runs until the file `go` exists; its id."""
        r = self.http.post("/api/v1/jobs", json={
            "name": "holder", "site": site, "executable": "/bin/sh",
            "args": ["-c", waits(go=str(go))], "resources": {"walltime": 600}})
        assert r.status_code == 202, r.text
        job_id: str = r.json()["id"]
        return job_id

    def get(self, job_id: str) -> dict[str, Any]:
        r = self.http.get(f"/api/v1/jobs/{job_id}")
        assert r.status_code == 200, r.text
        job: dict[str, Any] = r.json()
        return job

    def story(self) -> str:
        """Each TES task's state, site, reason and its executors' output tails (what a
        failed run needs to be understood)."""
        lines = []
        for job in self.tes_tasks():
            lines.append(f"{job['name']}: {job['state']} at {job['site']}: {job['reason']}")
            r = self.http.get(f"/ga4gh/tes/v1/tasks/{job['id']}", params={"view": "FULL"})
            for log in r.json().get("logs", []):
                for run in log.get("logs", []):
                    lines.append(f"  exit {run.get('exit_code')}\n  stdout: "
                                 f"{run.get('stdout', '')[-3000:]}\n  stderr: "
                                 f"{run.get('stderr', '')[-3000:]}")
                lines += [f"  system: {line}" for line in log.get("system_logs", [])]
        return "\n".join(lines)

    def placements(self) -> str:
        """Why each TES task went where it went: the router's words and each site's
        forecast (or why it was excluded)."""
        lines = []
        for job in self.tes_tasks():
            r = self.http.get(f"/api/v1/jobs/{job['id']}/placement")
            placed = r.json() if r.status_code == 200 else {}
            lines.append(f"{job['name']} at {job['site']}: {placed.get('why')}")
            for c in placed.get("candidates", []):
                f = c.get("forecast") or {}
                lines.append(f"  {c['site']}: {c.get('excluded') or ''} wait "
                             f"{f.get('wait_median')} staging {f.get('staging')} "
                             f"completion {f.get('completion')}")
        return "\n".join(lines)

    def tes_tasks(self) -> list[dict[str, Any]]:
        r = self.http.get("/api/v1/jobs", params={"origin": "tes"})
        assert r.status_code == 200, r.text
        items: list[dict[str, Any]] = r.json()["items"]
        return sorted(items, key=lambda j: j["created_at"])


@pytest.fixture
def jobs_of() -> Iterator[Callable[[LiveGateway, str], Jobs]]:
    """Jobs clients, closed after the test."""
    made: list[Jobs] = []

    def make(gateway: LiveGateway, token: str) -> Jobs:
        made.append(Jobs(gateway, token))
        return made[-1]

    yield make
    for jobs in made:
        jobs.http.close()


def _until(what: str, check: Any, engine: subprocess.Popen[str] | None = None,
           deadline: float = 300, jobs: Jobs | None = None) -> Any:
    """Poll `check` until it returns something true; fail naming `what` (and the engine's
    output and the TES tasks of `jobs`, if it ended) at the deadline."""
    end = time.monotonic() + deadline
    while True:
        found = check()
        if found:
            return found
        if engine is not None and engine.poll() is not None:
            story = jobs.story() if jobs is not None else ""
            raise AssertionError(f"snakemake ended before {what}:\n{story}\n"
                                 f"{engine.stdout.read()}")  # type: ignore[union-attr]
        assert time.monotonic() < end, f"no {what} after {deadline:.0f} s"
        time.sleep(0.5)


def test_snakemake_runs_a_workflow_across_two_sites(
        gateway: LiveGateway, registry: Registry, area: Path, tmp_path: Path,
        jobs_of: Callable[[LiveGateway, str], Jobs]) -> None:
    if not (VENV / "bin/snakemake").exists():
        pytest.fail(f"{VENV} is missing: tests/run.sh installs it")
    image = push_snakemake_image(registry, tmp_path / "root")
    other = jobs_of(gateway, user_token(gateway.runtime, "bea", SITES))
    token = user_token(gateway.runtime, "ada", SITES)
    ada = jobs_of(gateway, token)
    # galaxy busy: both its slots held by bea's jobs.
    galaxy_busy = [other.hold("galaxy", area / "go-galaxy") for _ in range(2)]
    _until("galaxy busy", lambda: all(other.get(j)["state"] == "RUNNING" for j in galaxy_busy))
    prefix, go_make = area / "ada/storage", area / "ada/go-make"
    engine = start_engine(gateway.url, token, image, area / "ada", SNAKEFILE,
                          ["--jobs", "1", "--config", f"go={go_make}"])
    try:
        first = _until("a running task", lambda: [
            t for t in ada.tes_tasks() if t["state"] == "RUNNING"], engine, 600, ada)[0]
        assert first["site"] == "roadrunner", first  # galaxy was busy
        # Now roadrunner busy (two jobs queued behind the task: both its cores) and
        # galaxy idle.
        roadrunner_busy = [other.hold("roadrunner", area / "go-roadrunner") for _ in range(2)]
        _until("jobs queued at roadrunner", lambda: all(
            other.get(j)["state"] in ("QUEUED", "RUNNING") for j in roadrunner_busy))
        (area / "go-galaxy").touch()
        _until("galaxy idle", lambda: all(other.get(j)["state"] in FINAL for j in galaxy_busy))
        go_make.touch()
        output, _ = engine.communicate(timeout=900)
        assert engine.returncode == 0, f"{ada.story()}\n{output}"
    finally:
        (area / "go-galaxy").touch()
        (area / "go-roadrunner").touch()
        if engine.poll() is None:
            engine.kill()
            engine.wait()

    assert (prefix / "results/summary.txt").read_text() == "55\n"
    tasks = ada.tes_tasks()
    # Named by the executor: snakejob.RULE.JOBID.sh
    assert [t["name"].split(".")[1] for t in tasks] == ["make", "square", "summarize"], tasks
    assert [t["state"] for t in tasks] == ["COMPLETED"] * 3
    assert [t["site"] for t in tasks] == ["roadrunner", "galaxy", "galaxy"], ada.placements()
    with gateway.runtime.sessions() as session:
        for task in tasks:
            charged = session.scalars(select(LedgerEntry).where(
                LedgerEntry.job_id == task["id"], LedgerEntry.kind == "charge",
                LedgerEntry.account == "used")).all()
            assert len(charged) == 1 and charged[0].amount_milli > 0, task
