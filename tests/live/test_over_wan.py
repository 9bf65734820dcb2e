"""The gateway's site-facing work over the testbed's emulated wide-area links (issue 32):
galaxy (Grid Engine) at 80 ms and parnass2 (Slurm, mapped accounts) at 150 ms round
trip, roadrunner (Slurm) at 20 ms. A job with an uploaded input is staged in, submitted,
followed to the end and its output staged back; a running job is cancelled; an upload
whose connection drops resumes; jobs waiting at a site whose link is cut fail over to
another site, and nothing runs twice."""

from __future__ import annotations

import hashlib
import os
import secrets
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.ssh import SshTarget, SshTransport
from adapters.transfer import stage_file
from adapters.transfer.site_fs import sha256_of
from testbed import wan
from testbed.config import TestbedConfig
from testbed.state import TestbedInfo
from tests.live.gateway import LiveGateway, live_gateway
from tests.live.test_routing_live import waiting_jobs_fail_over
from tests.waiting_jobs import let_go_at, waits

MIB = 1 << 20

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


def test_a_dropped_upload_resumes_over_the_link(testbed: TestbedInfo, tmp_path: Path) -> None:
    site = testbed.sites["galaxy"]
    assert site.wan_ip is not None
    transport = SshTransport(SshTarget(host=site.wan_ip, port=site.ssh_port, user="gwcomm",
                                       host_keys=(site.host_key,), key_path=site.key("gwcomm"),
                                       site=site.name))
    data = os.urandom(12 * MIB)  # over paramiko's SFTP (below the OpenSSH bulk size)
    source = tmp_path / "in.bin"
    source.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    dest = f"{site.scratch_root}/gw-wan-{secrets.token_hex(4)}/in.bin"
    dropped = threading.Event()
    killers: list[threading.Thread] = []

    def progress(done: int) -> None:
        if done >= len(data) // 3 and not dropped.is_set():  # once, a third of the way in
            dropped.set()
            killers.append(threading.Thread(target=transport.disconnect))
            killers[-1].start()

    try:
        result = stage_file(transport, str(source), digest, len(data), dest, progress=progress)
        for killer in killers:
            killer.join()
        assert dropped.is_set() and result.resumes >= 1, result
        assert transport.connects >= 2
        assert result.bytes_sent < 1.5 * len(data), result  # resumed, not started over
        assert sha256_of(transport, dest) == digest
    finally:
        transport.close()


def test_jobs_at_a_site_whose_link_is_cut_fail_over(testbed: TestbedInfo,
                                                    tmp_path: Path) -> None:
    """As tests/live/test_routing_live.py's failover, over the links: galaxy (80 ms) is
    cut from the network while two `auto` jobs wait there; they run at roadrunner
    (20 ms) and nothing runs twice."""
    config = TestbedConfig.from_env(prefix=testbed.prefix, subnet=testbed.subnet)
    with live_gateway(testbed, ("roadrunner", "galaxy"), tmp_path, over_wan=True,
                      local_site_enabled=False, failover_after_seconds=5) as gw:
        waiting_jobs_fail_over(gw, lambda: wan.cut(config, "galaxy"),
                               lambda: wan.cut(config, "galaxy", on=False))
