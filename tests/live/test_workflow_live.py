"""A workflow across the live testbed's sites (issue 16): a mesh step on the Grid Engine
site writes a file, a 4-way sweep on the Slurm sites reads it through a data edge copied
site to site, and a gather step collects the four results; and the same with its worker
killed twice."""

from __future__ import annotations

import copy
import hashlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.state import TestbedInfo
from tests.live.gateway import LiveGateway, live_gateway
from tests.live.scheduler_jobs import scheduler_jobs
from tests.live.test_crash_safe_submit import attempts_of, process_env
from tests.worker.gateway_process import GatewayProcess

SLURM_SITES = {"roadrunner", "parnass2"}

# Every output stays at its site (`keep`), so every data edge is a site-to-site copy. The
# sweep starts its program with srun, which only a Slurm site offers: routing (`auto`)
# must place it at roadrunner or parnass2.
SPEC: dict[str, Any] = {
    "name": "mesh-sweep-gather",
    "steps": {
        "mesh": {"job": {
            "name": "mesh", "site": "galaxy", "executable": "/bin/sh",
            "args": ["-c", "hostname > mesh.txt; echo 'grid 64x64' >> mesh.txt"],
            "outputs": ["mesh.txt"], "outputs_mode": "keep",
            "resources": {"walltime": 120}}},
        "solve": {
            "matrix": {"n": [1, 2, 3, 4]},
            "inputs": [{"from": "mesh:outputs/mesh.txt", "dest": "input/mesh.txt"}],
            "job": {
                "name": "solve-${{ matrix.n }}", "executable": "/bin/sh",
                "args": ["-c", 'printf "%s %s %s\\n" "$N" "$(hostname)" '
                               '"$(sha256sum input/mesh.txt | cut -d" " -f1)" > result.txt'],
                "environment": {"N": "${{ matrix.n }}"},
                "mpi": {"launcher": "srun"},
                "outputs": ["result.txt"], "outputs_mode": "keep",
                "resources": {"walltime": 120}}},
        "gather": {
            "inputs": [{"from": "solve[*]:outputs/result.txt", "dest": "results"}],
            "job": {
                "name": "gather", "executable": "/bin/sh",
                "args": ["-c", "cat results/0/result.txt results/1/result.txt "
                               "results/2/result.txt results/3/result.txt > all.txt"],
                "outputs": ["all.txt"], "resources": {"walltime": 120}}},
    },
}


@pytest.fixture(scope="module")
def gw(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with live_gateway(testbed, ("roadrunner", "parnass2", "galaxy"),
                      tmp_path_factory.mktemp("workflow")) as gw:
        yield gw


def _workflow(gw: LiveGateway, headers: dict[str, str], wf_id: str) -> dict[str, Any]:
    r = gw.client.get(f"/api/v1/workflows/{wf_id}", headers=headers)
    assert r.status_code == 200, r.text
    found: dict[str, Any] = r.json()
    return found


def _outputs(gw: LiveGateway, headers: dict[str, str], job_id: str) -> dict[str, Any]:
    r = gw.client.get(f"/api/v1/jobs/{job_id}/outputs", headers=headers)
    assert r.status_code == 200, r.text
    return {f["path"]: f for f in r.json()["items"]}


def test_mesh_on_grid_engine_sweep_on_slurm_gather_anywhere(gw: LiveGateway) -> None:
    headers = gw.token()
    r = gw.client.post("/api/v1/workflows", headers=headers, json=SPEC)
    assert r.status_code == 202, r.text
    wf_id = r.json()["id"]
    end = time.monotonic() + 600
    while (wf := _workflow(gw, headers, wf_id))["state"] not in ("completed", "failed",
                                                                   "cancelled"):
        assert time.monotonic() < end, [(s["instance"], s["state"], s["reason"])
                                        for s in wf["steps"]]
        gw.worker.run_once()
        time.sleep(0.5)
    steps = {s["instance"]: s for s in wf["steps"]}
    assert wf["state"] == "completed", [(s["instance"], s["state"], s["reason"])
                                         for s in wf["steps"]]
    assert sorted(steps) == ["gather", "mesh", "solve[0]", "solve[1]", "solve[2]",
                             "solve[3]"]
    assert steps["mesh"]["site"] == "galaxy"
    sweep_sites = {steps[f"solve[{i}]"]["site"] for i in range(4)}
    assert sweep_sites <= SLURM_SITES, sweep_sites

    # Each routed step ran where its placement (what `explain` shows) chose.
    for name, step in steps.items():
        if name == "mesh":
            continue
        r = gw.client.get(f"/api/v1/jobs/{step['job_id']}/placement", headers=headers)
        assert r.status_code == 200, r.text
        assert r.json()["chosen"][0] == step["site"], (name, r.json()["why"])
        if name.startswith("solve"):
            excluded = {c["site"]: c for c in r.json()["candidates"]}
            assert "galaxy" not in r.json()["chosen"], excluded.get("galaxy")

    # The mesh stayed at galaxy; every sweep instance read exactly its bytes (the sha256
    # the gateway recorded at galaxy), copied site to site into its own job directory.
    [mesh] = _outputs(gw, headers, steps["mesh"]["job_id"]).values()
    assert mesh["location"] == "site"
    gathered_out = _outputs(gw, headers, steps["gather"]["job_id"])["all.txt"]
    r = gw.client.get(f"/api/v1/jobs/{steps['gather']['job_id']}/outputs/all.txt",
                      headers=headers)
    assert r.status_code == 200, r.text
    assert hashlib.sha256(r.content).hexdigest() == gathered_out["sha256"]
    lines = [line.split() for line in r.text.splitlines()]
    assert [line[0] for line in lines] == ["1", "2", "3", "4"], r.text
    assert {line[2] for line in lines} == {mesh["sha256"]}, (r.text, mesh)
    # Each instance ran at the site the gateway says (the hostname is the site's name).
    assert [line[1] for line in lines] == [steps[f"solve[{i}]"]["site"] for i in range(4)]


def test_a_worker_killed_mid_workflow_finishes_it_each_step_once(
        gw: LiveGateway, testbed: TestbedInfo, tmp_path: Path) -> None:
    """The worker is a process of its own, killed with -9 while the sweep runs and again
    once the gather step is open; restarted each time, it finishes the workflow. Counted at
    the schedulers: one job per attempt's tag, one attempt per step."""
    spec = copy.deepcopy(SPEC)
    spec["name"] = "killed mid-workflow"
    solve = spec["steps"]["solve"]["job"]
    solve["args"] = ["-c", "sleep 4; " + solve["args"][1]]
    headers = gw.token()
    r = gw.client.post("/api/v1/workflows", headers=headers, json=spec)
    assert r.status_code == 202, r.text
    wf_id = r.json()["id"]
    worker = GatewayProcess(process_env(gw.runtime.settings,
                                        GRIDGATE_STAGING_LEASE_SECONDS="4"),
                            tmp_path / "worker.log", worker_only=True)

    def until(done: Callable[[dict[str, Any]], bool], what: str) -> dict[str, Any]:
        end = time.monotonic() + 300
        while not done(wf := _workflow(gw, headers, wf_id)):
            assert time.monotonic() < end, (what, [(s["instance"], s["state"], s["reason"])
                                                   for s in wf["steps"]])
            time.sleep(0.3)
        return wf

    def running(wf: dict[str, Any], prefix: str) -> int:
        return sum(s["state"] == "running" and s["instance"].startswith(prefix)
                   for s in wf["steps"])

    worker.start()
    try:
        until(lambda wf: running(wf, "solve") >= 2, "the sweep running")
        worker.kill9()
        worker.start()
        until(lambda wf: wf["steps"][-1]["state"] in ("running", "completed"),
              "the gather step open")
        worker.kill9()
        worker.start()
        wf = until(lambda wf: wf["state"] != "running", "the end")
    finally:
        worker.stop()
    assert wf["state"] == "completed", [(s["instance"], s["state"], s["reason"])
                                         for s in wf["steps"]]
    job_ids = [s["job_id"] for s in wf["steps"]]
    found = attempts_of(gw.runtime, job_ids)
    assert all(len(found[job_id]) == 1 for job_id in job_ids), found
    for step in wf["steps"]:
        [attempt] = found[step["job_id"]]
        assert attempt.site_name == step["site"]
        assert len(scheduler_jobs(testbed.sites[step["site"]], attempt.tag)) == 1, step
