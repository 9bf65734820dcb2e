"""Jobs through the REST API on the live testbed: real Slurm (with slurmdbd) and real
Grid Engine behind real sshd, reached over the pinned, pooled SSH transport, as each
site's config says (community or mapped accounts) and again with every site a
certificate site (alice logs in as gwalice with certificates the gateway's CA signs, and
the status account gwcomm follows her jobs)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testbed.holder import site_path
from testbed.state import TestbedInfo
from tests.live.gateway import MODES, LiveGateway, live_gateway

# Site -> the gateway user who submits there: anyone on a community site, a mapped user
# (alice has the account gwalice) on parnass2.
SITES: dict[str, str | None] = {"roadrunner": None, "galaxy": None, "parnass2": "alice"}


@pytest.fixture(scope="module", params=MODES)
def gw(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory,
       request: pytest.FixtureRequest) -> Iterator[LiveGateway]:
    # With certificates, the sites' status account (the testbed's gwcomm) follows the
    # jobs (the other certificate tests follow them through each researcher's account).
    certificates = request.param == "certificates"
    with live_gateway(testbed, tuple(SITES), tmp_path_factory.mktemp("remote"),
                      certificates=certificates,
                      status_account="gwcomm" if certificates else None) as gw:
        yield gw


def _user(gw: LiveGateway, site: str) -> str | None:
    """Who submits at `site`: in certificate mode alice everywhere (her own account)."""
    return "alice" if gw.certificates else SITES[site]


@pytest.mark.parametrize("site", SITES)
def test_job_runs_on_a_real_scheduler(gw: LiveGateway, site: str, testbed: TestbedInfo
                                      ) -> None:
    headers = gw.token(_user(gw, site))
    nasty = "x; touch /tmp/pwned-remote $(id)\nsecond"
    job_id = gw.submit(headers, {
        "name": nasty, "site": site, "executable": "/bin/sh",
        "args": ["-c", 'printf "%s|%s" "$1" "$V"', "sh", nasty],
        "environment": {"V": nasty}, "resources": {"walltime": 120}})
    job = gw.until_final(job_id)
    assert job["state"] == "COMPLETED", job
    attempt = job["attempts"][0]
    assert attempt["native_id"] and attempt["site"] == site
    assert gw.output(job_id) == f"{nasty}|{nasty}"
    assert not Path("/tmp/pwned-remote").exists()
    assert gw.sites()[site]["state"] == "up"
    if gw.certificates:  # followed by the status account, with a certificate of its own
        log = site_path(testbed.sites[site].holder_pid, "/var/log/sshd.log").read_text()
        assert "ID gridgate:gridgate:status" in log


@pytest.mark.parametrize("site", SITES)
def test_failing_job_keeps_its_exit_code(gw: LiveGateway, site: str) -> None:
    headers = gw.token(_user(gw, site))
    job_id = gw.submit(headers, {
        "name": "exit 3", "site": site, "executable": "/bin/sh", "args": ["-c", "exit 3"],
        "resources": {"walltime": 120}})
    job = gw.until_final(job_id)
    assert job["state"] == "FAILED" and job["exit_code"] == 3, job
