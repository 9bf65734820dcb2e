"""Certificate sites live (issue 33): roadrunner (Slurm) and galaxy (Grid Engine) in
`accounts.mode: certificate`, trusting the gateway's CA and nothing stored for anyone.
Each researcher's job runs as their own account, in a 0700 directory that account owns
and the other researcher's account cannot read; the scheduler's own accounting (`sacct`,
`qacct`) names that account; the site's sshd logged each login with its key id; nothing
in a request chooses the account."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from testbed.holder import site_path
from testbed.state import TestbedInfo
from tests.live.gateway import PRINCIPALS, LiveGateway, live_gateway
from tests.live.scheduler_jobs import COMMUNITY
from tests.live.test_identity import WHOAMI
from tests.testbed.fixture import ssh

SITES = ("roadrunner", "galaxy")


@pytest.fixture(scope="module")
def gw(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with live_gateway(testbed, SITES, tmp_path_factory.mktemp("certs"),
                      certificates=True, local_site_enabled=False) as gw:
        yield gw


def _accounted_user(testbed: TestbedInfo, site: str, native_id: str) -> str:
    """The user the scheduler's accounting records for the job."""
    info = testbed.sites[site]
    if site == "roadrunner":
        return ssh(info, COMMUNITY, ["sacct", "--noheader", "--parsable2", "--allocations",
                                     "--allusers", f"--jobs={native_id}",
                                     "--format=User"]).stdout.strip()
    record = ssh(info, COMMUNITY, ["qacct", "-j", native_id]).stdout
    owner = next(line for line in record.splitlines() if line.startswith("owner "))
    return owner.split()[1]


@pytest.mark.parametrize("site", SITES)
def test_each_researcher_runs_as_their_own_account(gw: LiveGateway, testbed: TestbedInfo,
                                                   site: str) -> None:
    uids = {a.name: a.uid for a in testbed.sites[site].accounts.values()}
    seen = {}
    for user in ("alice", "bob"):
        headers = gw.token(user)
        job_id = gw.submit(headers, {"name": "whoami", "site": site, "executable": "/bin/sh",
                                     "args": ["-c", WHOAMI], "resources": {"walltime": 120}})
        job = gw.until_final(job_id)
        assert job["state"] == "COMPLETED", job
        seen[user] = json.loads(gw.output(job_id))
        account = PRINCIPALS[user]
        assert int(seen[user]["uid"]) == uids[account]
        assert seen[user]["mode"] == "700"
        native_id = job["attempts"][-1]["native_id"]
        for _ in range(60):  # accounting is written a moment after the job ends
            if _accounted_user(testbed, site, native_id) == account:
                break
            gw.worker.run_once()
        assert _accounted_user(testbed, site, native_id) == account
    # The site's own permissions keep them apart: bob's job cannot list alice's directory.
    peek = gw.submit(gw.token("bob"), {"name": "peek", "site": site, "executable": "/bin/ls",
                                       "args": ["--", seen["alice"]["dir"]],
                                       "resources": {"walltime": 120}})
    job = gw.until_final(peek)
    assert job["state"] == "FAILED", job
    assert "Permission denied" in gw.output(peek, "stderr")
    # Every login was a certificate's, named in the site's sshd log.
    log = site_path(testbed.sites[site].holder_pid, "/var/log/sshd.log").read_text()
    for user in ("alice", "bob"):
        assert f"ID gridgate:{user}:commands" in log


def test_nothing_in_a_request_chooses_the_account(gw: LiveGateway, testbed: TestbedInfo
                                                  ) -> None:
    """alice names bob's account wherever a request can (name, environment, labels): her
    job still runs as her own, the one principal the site's mapping gives her."""
    uids = {a.name: a.uid for a in testbed.sites["roadrunner"].accounts.values()}
    job_id = gw.submit(gw.token("alice"), {
        "name": "gwbob", "site": "roadrunner", "executable": "/bin/sh",
        "args": ["-c", WHOAMI], "resources": {"walltime": 120},
        "environment": {"USER": "gwbob", "LOGNAME": "gwbob"}, "labels": {"user": "gwbob"}})
    job = gw.until_final(job_id)
    assert job["state"] == "COMPLETED", job
    assert int(json.loads(gw.output(job_id))["uid"]) == uids["gwalice"]
