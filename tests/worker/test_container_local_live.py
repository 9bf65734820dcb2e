"""LIVE (this machine): a charliecloud job on the local site (unconfined: ch-run makes its
own namespaces and mounts the image under /var/tmp, which the local sandbox does not
offer), end to end through the API and the worker. The gateway extracts the uploaded SIF's
SquashFS partition and stages it into the site's cache and the job directory; the local
adapter runs the ch-run launch line, which writes a file into the job directory (bound at
/mnt/0). Needs ch-run and read-write /dev/fuse."""

from __future__ import annotations

import dataclasses
import os
import shutil
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from containers.runtimes import RuntimeKind
from containers.site_caps import RuntimeOffer, SiteContainerCaps
from containers.versions import version
from gateway.runtime import Runtime
from gateway.settings import Settings
from gateway.worker.loop import Worker
from tests.api.test_container_jobs import upload
from tests.conftest import MakeUser
from tests.containers.conftest import build, make_rootfs, need
from tests.staging.helpers import run_until
from tests.worker.test_container_staging import workdir_of
from tests.worker.test_local_unconfined import GATEWAY_ACCOUNT


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    """The shared fixture's settings, with local isolation turned off."""
    return Settings(data_dir=tmp_path / "data", database_url=database_url, run_worker=False,
                    public_url="http://gateway.test", local_isolation="none")


def test_a_charliecloud_job_runs_on_the_local_site(
        client: TestClient, runtime: Runtime, make_user: MakeUser, tmp_path: Path) -> None:
    if shutil.which("ch-run") is None or not os.access("/dev/fuse", os.R_OK | os.W_OK):
        pytest.skip("needs ch-run and read-write /dev/fuse")
    need("mksquashfs")
    build(make_rootfs(tmp_path / "root"), tmp_path / "app.sif")
    local = runtime.sites.get("local")
    ch = RuntimeOffer(RuntimeKind.CHARLIECLOUD, version("0.31"))
    runtime.sites._entries["local"] = dataclasses.replace(
        local, containers=SiteContainerCaps("local", "local", (ch,)))
    user = make_user(GATEWAY_ACCOUNT)
    image = f"upload:{upload(client, user, (tmp_path / 'app.sif').read_bytes())}"
    r = client.post("/api/v1/jobs", headers=user.headers, json={
        "name": "ch", "executable": "/bin/sh",
        "args": ["-c", 'echo "$GREETING in $(pwd -P)" > out.txt'],
        "container": {"image": image, "environment": {"GREETING": "hi $HOME"}}})
    assert r.status_code == 202, r.text
    job_id = r.json()["id"]
    job = run_until(Worker(runtime, "w"), client, user, job_id)
    assert job["state"] == "COMPLETED", (job["reason"], job["attempts"])
    out = Path(workdir_of(runtime, job_id)) / "out.txt"
    assert out.read_text() == "hi $HOME in /mnt/0\n"
