"""Who a job runs as, live: on a mapped site (parnass2) each gateway user's jobs run under
their own Unix account; on a community site (roadrunner) users share one account and the
gateway keeps them apart."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from testbed.state import TestbedInfo
from tests.live.gateway import LiveGateway, live_gateway

# What a job reports about itself: its uid, and the mode and owner of its directory.
WHOAMI = 'printf \'{"uid": %s, "dir": "%s", "mode": "%s"}\' "$(id -u)" "$PWD" "$(stat -c %a .)"'


@pytest.fixture(scope="module")
def gw(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with live_gateway(testbed, ("parnass2", "roadrunner"), tmp_path_factory.mktemp("id")) as gw:
        yield gw


def _whoami(gw: LiveGateway, headers: dict[str, str], site: str) -> tuple[str, dict[str, str]]:
    job_id = gw.submit(headers, {"name": "whoami", "site": site, "executable": "/bin/sh",
                                 "args": ["-c", WHOAMI], "resources": {"walltime": 120}})
    job = gw.until_final(job_id)
    assert job["state"] == "COMPLETED", job
    return job_id, json.loads(gw.output(job_id))


def test_mapped_users_run_under_their_own_uids(gw: LiveGateway, testbed: TestbedInfo) -> None:
    alice, bob = gw.token("alice"), gw.token("bob")
    _, as_alice = _whoami(gw, alice, "parnass2")
    _, as_bob = _whoami(gw, bob, "parnass2")
    uids = {a.name: a.uid for a in testbed.sites["parnass2"].accounts.values()}
    assert int(as_alice["uid"]) == uids["gwalice"]
    assert int(as_bob["uid"]) == uids["gwbob"]
    assert as_alice["mode"] == as_bob["mode"] == "700"

    # The site's own permissions keep them apart: bob's job cannot list alice's directory.
    job_id = gw.submit(bob, {"name": "peek", "site": "parnass2", "executable": "/bin/ls",
                             "args": ["--", as_alice["dir"]], "resources": {"walltime": 120}})
    job = gw.until_final(job_id)
    assert job["state"] == "FAILED" and job["exit_code"] != 0, job
    assert "Permission denied" in gw.output(job_id, "stderr")


def test_a_user_without_an_account_on_a_mapped_site_is_told_so(gw: LiveGateway) -> None:
    carol = gw.token("carol")
    r = gw.client.post("/api/v1/jobs", headers=carol, json={
        "name": "nope", "site": "parnass2", "executable": "/bin/true"})
    assert r.status_code == 422
    assert "has none for gateway user 'carol'" in r.json()["detail"]
    # With site auto the mapped site is skipped, not chosen and failed later.
    # Issue 12: accepted with no site, routed when the worker dispatches it, never to
    # the mapped site.
    auto = gw.submit(carol, {"name": "auto", "executable": "/bin/true",
                             "resources": {"walltime": 60}})
    assert gw.until_final(auto)["site"] != "parnass2"


def test_community_users_cannot_reach_each_others_jobs(gw: LiveGateway) -> None:
    a, b = gw.token(), gw.token()
    job_id, as_a = _whoami(gw, a, "roadrunner")
    assert as_a["mode"] == "700"
    for method, path in (("GET", ""), ("GET", "/events"), ("GET", "/logs/stdout"),
                         ("GET", "/logs/stderr"), ("POST", "/cancel")):
        r = gw.client.request(method, f"/api/v1/jobs/{job_id}{path}", headers=b)
        assert r.status_code == 404, (path, r.text)
    listed = gw.client.get("/api/v1/jobs", headers=b).json()["items"]
    assert job_id not in {j["id"] for j in listed}
