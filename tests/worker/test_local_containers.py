"""LIVE (this machine): the local site of the embedded default runs container jobs with
Charliecloud's ch-run inside its sandbox (issue 30, item 4). Real parts throughout: the
seed ping-pong built into a SIF by `examples/container-pingpong/build-image.sh` (this
host's MPICH inside), run in hybrid mode by the local MPICH's mpiexec with one ch-run per
rank; an image pushed to the real registry and run as a GA4GH TES task; the probe itself
against a sandbox that forbids what ch-run needs."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from adapters.local.sandbox import SandboxConfig
from containers.runtimes import RuntimeKind
from gateway.db.models import Attempt
from gateway.runtime import Runtime
from gateway.services.sites.local_containers import local_containers
from gateway.worker.loop import Worker
from tests.api.test_container_jobs import upload
from tests.conftest import MakeUser
from tests.containers.conftest import make_rootfs, need
from tests.registry.fixture import Registry, push_image
from tests.registry.test_registry_run_live import tree_layer
from tests.worker.test_worker_local import post, run_until

ROOT = Path(__file__).resolve().parents[2]
TES = "/ga4gh/tes/v1"


def as_root() -> None:
    # An unprivileged gateway's sandbox forbids the user namespace ch-run needs (below).
    if os.geteuid() != 0:
        pytest.skip("the local site runs containers when the gateway runs as root")
    need("ch-run")
    need("bwrap")


@pytest.fixture(scope="module")
def pingpong_sif(tmp_path_factory: pytest.TempPathFactory) -> Path:
    for tool in ("mpicc.mpich", "mksquashfs", "siftool"):
        need(tool)
    out = tmp_path_factory.mktemp("image") / "pingpong.sif"
    gridgate = Path(sys.executable).parent / "gridgate"
    subprocess.run(["bash", str(ROOT / "examples/container-pingpong/build-image.sh"),
                    str(out)], check=True, capture_output=True, timeout=300,
                   env={**os.environ, "GRIDGATE": str(gridgate)})
    return out


def test_the_local_site_offers_ch_run_and_its_mpich(runtime: Runtime) -> None:
    as_root()
    caps = runtime.sites.get("local").containers
    assert caps is not None
    (offer,) = caps.runtimes
    assert offer.kind is RuntimeKind.CHARLIECLOUD
    assert [m.name for m in caps.mpi] == ["mpich"]


def test_a_sandbox_without_nested_user_namespaces_offers_none_and_says_why(
        tmp_path: Path) -> None:
    need("ch-run")
    caps, why = local_containers(SandboxConfig("/usr/bin/bwrap"), tmp_path, None)
    assert caps is None
    assert why == ("ch-run cannot make its namespaces where local jobs run: the sandbox of a "
                   "gateway not running as root forbids the nested user namespace ch-run "
                   "needs")


def test_the_container_pingpong_runs_on_the_local_site(
        client: TestClient, runtime: Runtime, make_user: MakeUser, pingpong_sif: Path) -> None:
    as_root()
    user = make_user()
    image = upload(client, user, pingpong_sif.read_bytes())
    job_id = post(client, user.headers, {
        "name": "container-pingpong", "executable": "/opt/pingpong/bin/pingpong",
        "args": ["--max-bytes", "65536", "--out", "results.jsonl"],
        "resources": {"nodes": 1, "ranks": 2, "walltime": "00:10:00"},
        "mpi": {"launcher": "mpirun"}, "container": {"image": f"upload:{image}"},
        "outputs": ["results.jsonl"]})
    job = run_until(Worker(runtime), client, user.headers, job_id, {"COMPLETED", "FAILED"},
                    deadline=180)
    assert job["state"] == "COMPLETED", job
    out = client.get(f"/api/v1/jobs/{job_id}/outputs/results.jsonl", headers=user.headers)
    assert out.status_code == 200, out.text
    rows = [json.loads(line) for line in out.text.splitlines()]
    assert rows and rows[-1]["bytes"] == 65536
    # The unpacked image stays the cache's: the job's account cannot write to it.
    cache = Path(runtime.sites.get("local").cache_dir(None))
    (unpacked,) = cache.glob("*.d")
    assert unpacked.stat().st_uid != pwd.getpwnam(runtime.settings.local_job_user).pw_uid


def test_a_tes_task_runs_on_the_local_site(client: TestClient, runtime: Runtime,
                                           make_user: MakeUser, registry: Registry,
                                           tmp_path: Path) -> None:
    as_root()
    need("unsquashfs")
    push_image(registry, "lab/shell", "1", [tree_layer(make_rootfs(tmp_path / "rootfs"))],
               ["GREETING=hello"])
    runtime.settings.insecure_registries = registry.host
    user = make_user()
    created = client.post(f"{TES}/tasks", headers=user.headers, json={
        "name": "greet", "executors": [{
            "image": f"{registry.host}/lab/shell:1",
            "command": ["/bin/sh", "-c",
                        'read -r line < in/greeting.txt; echo "$GREETING from $WHO: $line"; '
                        'read -r piped; echo "$piped" >&2'],
            "workdir": "/data", "env": {"WHO": "a TES task"},
            # Its stdin from a file in the container, its stderr into one.
            "stdin": "/data/in/greeting.txt", "stderr": "/data/err.txt"}],
        # Given inline: kept as the owner's upload, placed at its path in the container
        # (ch-run binds the job's tes/data at /data, made in the unpacked image for it).
        "inputs": [{"path": "/data/in/greeting.txt", "content": "an input\n"}]})
    assert created.status_code == 200, created.text
    task_id = created.json()["id"]
    worker = Worker(runtime)
    task = {}
    for _ in range(600):
        worker.run_once()
        task = client.get(f"{TES}/tasks/{task_id}?view=FULL", headers=user.headers).json()
        if task["state"] in ("COMPLETE", "EXECUTOR_ERROR", "SYSTEM_ERROR"):
            break
    assert task["state"] == "COMPLETE", task
    assert task["logs"][0]["logs"][0]["exit_code"] == 0
    out = client.get(f"/api/v1/jobs/{task_id}/logs/stdout", headers=user.headers)
    assert out.status_code == 200, out.text
    assert out.text == "hello from a TES task: an input\n"
    # stderr went to its file in the container: the job's tes/data/err.txt.
    with runtime.sessions() as session:
        workdir = session.scalars(select(Attempt.workdir).where(Attempt.job_id == task_id)).one()
    assert (Path(workdir) / "tes/data/err.txt").read_text() == "an input\n"
    uploads = client.get("/api/v1/uploads", headers=user.headers).json()["items"]
    assert [(u["name"], u["size"], u["state"]) for u in uploads] == [
        ("tes-input", len("an input\n"), "complete")]



def test_a_tes_task_reads_and_writes_the_user_s_shared_directory(
        client: TestClient, runtime: Runtime, make_user: MakeUser, registry: Registry,
        tmp_path: Path) -> None:
    """file:// inputs (a file, a directory) and outputs (a file, a directory, matches of
    a wildcard) in the directory the admin declared for the user, as a workflow engine
    sharing a file system with the gateway uses them; another user's is refused."""
    as_root()
    need("unsquashfs")
    rootfs = make_rootfs(tmp_path / "rootfs", "mkdir", "cat")
    push_image(registry, "lab/tools", "1", [tree_layer(rootfs)], [])
    runtime.settings.insecure_registries = registry.host
    runtime.settings.file_url_dirs = f"{tmp_path}/share/{{user}}"
    user, other = make_user("alice"), make_user("bob")
    home = tmp_path / "share/alice"
    (home / "refs/sub").mkdir(parents=True)
    (tmp_path / "share/bob").mkdir()
    (home / "sample.txt").write_text("sample\n")
    (home / "refs/a.fa").write_text(">a\n")
    (home / "refs/sub/b.fa").write_text(">b\n")
    task = {
        "name": "shared", "executors": [{
            "image": f"{registry.host}/lab/tools:1", "workdir": "/work",
            "command": ["/bin/sh", "-c",
                        "mkdir -p report parts && cat /in/sample.txt /in/refs/a.fa "
                        "/in/refs/sub/b.fa > merged.txt && echo done > report/status && "
                        "echo 1 > parts/p1.csv && echo 2 > parts/p2.csv && echo x > parts/n"]}],
        "inputs": [{"path": "/in/sample.txt", "url": f"file://{home}/sample.txt"},
                   {"path": "/in/refs", "url": f"file://{home}/refs", "type": "DIRECTORY"}],
        "outputs": [{"path": "/work/merged.txt", "url": f"file://{home}/out/merged.txt"},
                    {"path": "/work/report", "url": f"file://{home}/out/report",
                     "type": "DIRECTORY"},
                    {"path": "/work/parts/*.csv", "path_prefix": "/work/parts",
                     "url": f"file://{home}/out/csv/"}]}
    refused = client.post(f"{TES}/tasks", headers=other.headers, json=task)
    assert refused.status_code == 422, refused.text
    assert "outside the directories" in refused.json()["detail"]
    created = client.post(f"{TES}/tasks", headers=user.headers, json=task)
    assert created.status_code == 200, created.text
    task_id = created.json()["id"]
    worker = Worker(runtime)
    got: dict[str, Any] = {}
    for _ in range(600):
        worker.run_once()
        got = client.get(f"{TES}/tasks/{task_id}?view=BASIC", headers=user.headers).json()
        if got["state"] in ("COMPLETE", "EXECUTOR_ERROR", "SYSTEM_ERROR"):
            break
    full = client.get(f"{TES}/tasks/{task_id}?view=FULL", headers=user.headers).json()
    assert got["state"] == "COMPLETE", json.dumps(full["logs"])
    assert (home / "out/merged.txt").read_text() == "sample\n>a\n>b\n"
    assert (home / "out/report/status").read_text() == "done\n"
    assert {p.stat().st_uid for p in (home / "out", home / "out/merged.txt")} == {
        home.stat().st_uid}
    assert sorted(p.name for p in (home / "out/csv").iterdir()) == ["p1.csv", "p2.csv"]
    assert sorted((o["path"], o["url"], o["size_bytes"]) for o in got["logs"][-1]["outputs"]) \
        == [("/work/merged.txt", f"file://{home}/out/merged.txt", "13"),
            ("/work/parts/p1.csv", f"file://{home}/out/csv/p1.csv", "2"),
            ("/work/parts/p2.csv", f"file://{home}/out/csv/p2.csv", "2"),
            ("/work/report/status", f"file://{home}/out/report/status", "5")]
    # An output the run did not leave: the task fails as the system's fault, saying which.
    missing = client.post(f"{TES}/tasks", headers=user.headers, json={
        "executors": [{"image": f"{registry.host}/lab/tools:1", "command": ["/bin/sh", "-c", ":"]}],
        "outputs": [{"path": "/work/none.txt", "url": f"file://{home}/out/none.txt"}]})
    assert missing.status_code == 200, missing.text
    for _ in range(600):
        worker.run_once()
        got = client.get(f"{TES}/tasks/{missing.json()['id']}?view=FULL",
                         headers=user.headers).json()
        if got["state"] in ("COMPLETE", "EXECUTOR_ERROR", "SYSTEM_ERROR"):
            break
    assert got["state"] == "SYSTEM_ERROR", got
    assert "the run left no file tes/work/none.txt" in got["logs"][-1]["system_logs"][0]
    assert not (home / "out/none.txt").exists()
