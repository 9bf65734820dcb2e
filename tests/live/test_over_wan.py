"""The gateway's site-facing work over the testbed's emulated wide-area links (issue 32):
galaxy (Grid Engine) at 80 ms and parnass2 (Slurm, mapped accounts) at 150 ms round
trip. A job with an uploaded input is staged in, submitted, followed to the end and its
output staged back; a running job is cancelled; the sites stay up throughout."""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.state import TestbedInfo
from tests.live.gateway import LiveGateway, live_gateway
from tests.waiting_jobs import let_go_at, waits

# Site -> the gateway user who submits there (a mapped user on parnass2).
SITES: dict[str, str | None] = {"galaxy": None, "parnass2": "alice"}


@pytest.fixture(scope="module")
def gw(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with live_gateway(testbed, tuple(SITES), tmp_path_factory.mktemp("wan"),
                      over_wan=True) as gw:
        yield gw


@pytest.mark.parametrize("site", SITES)
def test_a_staged_job_runs_over_the_link(gw: LiveGateway, testbed: TestbedInfo,
                                         site: str, tmp_path: Path) -> None:
    assert str(testbed.sites[site].wan_ip) in Path(gw.runtime.settings.site_configs_dir or ""
                                              ).joinpath(f"{site}.yaml").read_text()
    headers = gw.token(SITES[site])
    data = os.urandom(3 * 1024 * 1024)
    source = tmp_path / "in.bin"
    source.write_bytes(data)
    upload_id = gw.upload(headers, source, hashlib.sha256(data).hexdigest())
    job_id = gw.submit(headers, {
        "name": "over the wan", "site": site, "executable": "/bin/sh",
        "args": ["-c", "sha256sum in/data.bin | cut -c1-64 > out.txt; cat out.txt"],
        "inputs": [{"source": f"upload:{upload_id}", "dest": "in/data.bin"}],
        "outputs": ["out.txt"], "resources": {"walltime": 300}})
    job = gw.until_final(job_id, deadline=600)
    assert job["state"] == "COMPLETED", job
    assert gw.output(job_id).strip() == hashlib.sha256(data).hexdigest()
    r = gw.client.get(f"/api/v1/jobs/{job_id}/outputs/out.txt", headers=headers)
    assert r.status_code == 200 and r.text.strip() == hashlib.sha256(data).hexdigest()
    assert gw.sites()[site]["state"] == "up"


@pytest.mark.parametrize("site", SITES)
def test_a_running_job_is_cancelled_over_the_link(gw: LiveGateway, testbed: TestbedInfo,
                                                  site: str) -> None:
    headers = gw.token(SITES[site])
    go = f"/tmp/gw-wan-go-{secrets.token_hex(4)}"
    job_id = gw.submit(headers, {
        "name": "held", "site": site, "executable": "/bin/sh", "args": ["-c", waits(go=go)],
        "resources": {"walltime": 300}})
    gw.until([job_id], lambda j: j["state"] == "RUNNING", deadline=600)
    gw.cancel(job_id)
    try:
        job = gw.until_final(job_id, deadline=600)
    finally:
        let_go_at(testbed.sites[site], go)  # never left waiting, whatever happened
    assert job["state"] == "CANCELLED", job
