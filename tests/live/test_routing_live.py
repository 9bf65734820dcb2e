"""The metascheduler on the live testbed (roadrunner: Slurm, galaxy: Grid Engine; two cores
each, and Slurm gives a job its whole node): a busy site loses `auto` jobs to an idle one
and the placement says why; a hedged job runs once; a site whose sshd stops has its
waiting jobs routed elsewhere, and the stale attempts are revoked when it returns. Hedging
and failover also with certificates (alice logs in to both sites as gwalice).
"""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from gateway.db.engine import transaction
from gateway.db.models import Site
from testbed import faults, manager
from testbed.config import TestbedConfig
from testbed.state import TestbedInfo
from tests.cli.helpers import Cli
from tests.client.live import serve_gateway
from tests.live.gateway import FINAL, MODES, LiveGateway, live_gateway
from tests.live.scheduler_jobs import COMMUNITY
from tests.testbed.fixture import running_testbed, ssh, unique_config
from tests.waiting_jobs import let_go_at, waits

SITES = ("roadrunner", "galaxy")
ENDED = (*FINAL, "REVOKED")


def _sleep(seconds: int, walltime: int, **extra: Any) -> dict[str, Any]:
    return {"name": f"sleep {seconds}", "executable": "/bin/sleep", "args": [str(seconds)],
            "resources": {"walltime": walltime}, **extra}


def _waiting(site: str, go: str) -> dict[str, Any]:
    """A job at `site` that runs until the file `go` appears there."""
    return {"name": "waiting", "site": site, "executable": "/bin/sh",
            "args": ["-c", waits(go=go)], "resources": {"walltime": 300}}


def _placement(gw: LiveGateway, job_id: str) -> dict[str, Any]:
    r = gw.client.get(f"/api/v1/jobs/{job_id}/placement", headers=gw.owner(job_id))
    assert r.status_code == 200, r.text
    placement: dict[str, Any] = r.json()
    return placement


def _cancel_unfinished(gw: LiveGateway, ids: list[str]) -> None:
    for job_id in ids:
        if gw.job(job_id)["state"] not in FINAL:
            gw.cancel(job_id)
    gw.until(ids, lambda j: j["state"] in FINAL, deadline=120)


def _at_scheduler(gw: LiveGateway, ids: list[str]) -> None:
    gw.until(ids, lambda j: j["state"] in ("QUEUED", "RUNNING"), deadline=120)


@pytest.fixture(scope="module")
def gw(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with live_gateway(testbed, SITES, tmp_path_factory.mktemp("routing"),
                      local_site_enabled=False) as gw:
        yield gw


@pytest.fixture(scope="module")
def certificate_gw(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[LiveGateway]:
    """Both sites certificate sites (alice logs in as gwalice)."""
    with live_gateway(testbed, SITES, tmp_path_factory.mktemp("routing-certs"),
                      local_site_enabled=False, certificates=True) as gw:
        yield gw


def test_a_busy_site_sends_auto_jobs_to_the_idle_one(gw: LiveGateway) -> None:
    headers = gw.token()
    fillers = [gw.submit(headers, _sleep(600, 700, site="roadrunner")) for _ in range(2)]
    _at_scheduler(gw, fillers)  # both of roadrunner's cores taken
    job_id = gw.submit(headers, _sleep(1, 60))
    job = gw.until([job_id], lambda j: j["site"] is not None, deadline=60)[job_id]
    placement = _placement(gw, job_id)
    by_site = {c["site"]: c for c in placement["candidates"]}
    busy, idle = by_site["roadrunner"]["forecast"], by_site["galaxy"]["forecast"]
    assert (job["site"], placement["chosen"]) == ("galaxy", ["galaxy"]), placement
    # Chosen for the queue, not a tie: roadrunner's predicted wait is the fillers' time.
    assert busy["wait_median"] >= 300 > idle["wait_median"], placement
    assert placement["why"].startswith("Site 'galaxy' has the earliest predicted "
                                       "completion"), placement
    assert "next best 'roadrunner'" in placement["why"], placement
    assert gw.until_final(job_id)["state"] == "COMPLETED"
    _cancel_unfinished(gw, fillers)


# What only roadrunner offers: a job asking for it is placed there whatever the load,
# galaxy is left out saying why, Slurm receives the request (slurmctld's view, kept for
# MinJobAge=300 s; slurmdbd shows a just-ended job's QOS as `Unknown` for a few seconds),
# and a job asking for more than any site offers is refused at submission.
ONLY_AT_ROADRUNNER = [
    pytest.param(  # node scratch: roadrunner's TmpDisk 2048 MiB, galaxy's 1024
        {"resources": {"walltime": 60, "scratch_mb": 1500}},
        "needs 1500 MiB of node-local scratch per node; site 'galaxy' has 1024 MiB",
        "MinTmpDiskNode=1500M", {"resources": {"walltime": 60, "scratch_mb": 4096}},
        "needs 4096 MiB of node-local scratch per node", id="scratch"),
    pytest.param(  # a QOS: `long`, which the testbed makes in roadrunner's slurmdbd
        {"qos": "long"}, "QOS 'long' is not offered at site 'galaxy' (offers: none)",
        " QOS=long\n", {"qos": "urgent"},
        "QOS 'urgent' is not offered at site 'roadrunner' (offers: long, normal)", id="qos"),
]


@pytest.mark.parametrize(("asks", "galaxy_says", "slurm_shows", "too_much", "refusal"),
                         ONLY_AT_ROADRUNNER)
def test_what_only_one_site_offers_sends_the_job_there(
        gw: LiveGateway, testbed: TestbedInfo, asks: dict[str, Any], galaxy_says: str,
        slurm_shows: str, too_much: dict[str, Any], refusal: str) -> None:
    headers = gw.token()
    job_id = gw.submit(headers, _sleep(1, 60, **asks))
    job = gw.until([job_id], lambda j: j["state"] in FINAL, deadline=120)[job_id]
    assert (job["state"], job["site"]) == ("COMPLETED", "roadrunner"), job
    by_site = {c["site"]: c for c in _placement(gw, job_id)["candidates"]}
    assert galaxy_says in (by_site["galaxy"]["excluded"] or ""), by_site
    detail = ssh(testbed.sites["roadrunner"], COMMUNITY, [
        "scontrol", "show", "job", job["attempts"][-1]["native_id"]]).stdout
    assert slurm_shows in detail, detail
    refused = gw.client.post("/api/v1/jobs", headers=headers, json=_sleep(1, 60, **too_much))
    assert refused.status_code == 422, refused.text
    assert refusal in refused.text, refused.text


@pytest.mark.parametrize("mode", MODES)
def test_a_hedged_job_runs_once(mode: str, testbed: TestbedInfo,
                                request: pytest.FixtureRequest) -> None:
    gw: LiveGateway = request.getfixturevalue(
        "certificate_gw" if mode == "certificates" else "gw")
    headers = gw.token()
    # Both sites' two cores busy with waiting jobs: the job queues at both; roadrunner's
    # fillers are let go, so it starts there, and its galaxy sibling (still queued: those
    # fillers are never let go) is revoked.
    go = f"/tmp/go-hedge-{uuid.uuid4().hex[:8]}"
    fillers = [*(gw.submit(headers, _waiting("roadrunner", go)) for _ in range(2)),
               *(gw.submit(headers, _waiting("galaxy", f"{go}-never")) for _ in range(2))]
    gw.until(fillers, lambda j: j["state"] == "RUNNING", deadline=120)
    job_id = gw.submit(headers, _sleep(5, 60, routing={"hedge": 2}))
    gw.until([job_id], lambda j: sum(bool(a["native_id"]) for a in j["attempts"]) == 2,
             deadline=120)
    let_go_at(testbed.sites["roadrunner"], go)
    # The job ends with its winner; the revocation may reach the other site a bit later.
    job = gw.until([job_id], lambda j: j["state"] in FINAL and all(
        a["state"] in ENDED for a in j["attempts"]), deadline=180)[job_id]
    assert job["state"] == "COMPLETED", job
    assert sorted(_placement(gw, job_id)["chosen"]) == sorted(SITES)
    ends = sorted((a["site"], a["state"]) for a in job["attempts"])
    assert ends == [("galaxy", "REVOKED"), ("roadrunner", "COMPLETED")], job["attempts"]
    assert job["site"] == "roadrunner"
    revoked = next(a for a in job["attempts"] if a["site"] == "galaxy")
    assert revoked["native_id"] and revoked["started_at"] is None, revoked  # never ran
    _cancel_unfinished(gw, fillers)


@pytest.fixture(scope="module")
def own_testbed() -> Iterator[tuple[TestbedConfig, TestbedInfo]]:
    """A testbed of this test's own: galaxy's sshd gets stopped."""
    config = unique_config()
    with running_testbed(config) as info:
        yield config, info


def _drain(gw: LiveGateway, site: str, drained: bool) -> None:
    with transaction(gw.runtime.sessions) as session:
        session.execute(update(Site).where(Site.name == site).values(drained=drained))


def waiting_jobs_fail_over(gw: LiveGateway, down: Callable[[], object],
                           back: Callable[[], object]) -> None:
    """galaxy busy with long jobs of its own; two `auto` jobs routed there while
    roadrunner is closed, so they wait at galaxy; galaxy goes `down()`: the jobs run at
    roadrunner; once it is `back()`, its stale attempts are cancelled there and end
    REVOKED, never having started."""
    headers = gw.token()
    fillers = [gw.submit(headers, _sleep(600, 700, site="galaxy")) for _ in range(2)]
    _at_scheduler(gw, fillers)
    _drain(gw, "roadrunner", True)
    waiting = [gw.submit(headers, _sleep(2, 60)) for _ in range(2)]
    jobs = gw.until(waiting, lambda j: j["state"] == "QUEUED", deadline=120)
    assert {j["site"] for j in jobs.values()} == {"galaxy"}, jobs
    _drain(gw, "roadrunner", False)

    down()
    try:
        jobs = gw.until(waiting, lambda j: j["state"] == "COMPLETED", deadline=240)
        assert {j["site"] for j in jobs.values()} == {"roadrunner"}, jobs
        assert gw.sites()["galaxy"]["state"] == "down"
    finally:
        back()
    jobs = gw.until(waiting, lambda j: all(a["state"] in ENDED for a in j["attempts"]),
                    deadline=180)
    for job in jobs.values():
        ends = sorted((a["site"], a["state"]) for a in job["attempts"])
        assert ends == [("galaxy", "REVOKED"), ("roadrunner", "COMPLETED")], job
        stale = next(a for a in job["attempts"] if a["site"] == "galaxy")
        assert stale["started_at"] is None, stale  # it never ran there
    _cancel_unfinished(gw, fillers)


@pytest.mark.parametrize("mode", MODES)
def test_a_down_sites_waiting_jobs_fail_over_and_nothing_runs_twice(
        own_testbed: tuple[TestbedConfig, TestbedInfo], tmp_path: Path, mode: str) -> None:
    config, info = own_testbed
    with live_gateway(info, SITES, tmp_path, local_site_enabled=False,
                      failover_after_seconds=5, certificates=mode == "certificates") as gw:
        # galaxy's sshd stopped; back with the same host key.
        waiting_jobs_fail_over(gw, lambda: faults.stop_daemon(config, "galaxy", "sshd"),
                               lambda: manager.up(config))


def test_gridgate_estimate_prints_a_row_per_site(testbed: TestbedInfo, tmp_path: Path) -> None:
    configs = tmp_path / "site-configs"
    configs.mkdir()
    for name in SITES:
        shutil.copy(Path(testbed.site_configs) / f"{name}.yaml", configs)
    (tmp_path / "data").mkdir()
    with serve_gateway(tmp_path / "data", site_configs_dir=configs,
                       local_site_enabled=False) as gw:
        gw.login(tmp_path / "config")
        cli = Cli(gw, tmp_path / "config")
        spec = tmp_path / "job.yaml"
        spec.write_text("name: estimate me\nexecutable: /bin/sleep\nargs: ['1']\n"
                        "resources: {walltime: 60}\n")
        shown = cli("estimate", str(spec)).stdout
        rows = [line.split() for line in shown.splitlines()]
        assert sorted(r[0] for r in rows if r and r[0] in SITES) == sorted(SITES), shown
        assert any(r[:2] in (["roadrunner", "chosen"], ["galaxy", "chosen"]) for r in rows)
        document = cli.json("estimate", str(spec))
        assert sorted(c["site"] for c in document["candidates"]) == sorted(SITES)
        assert all(c["forecast"] is not None for c in document["candidates"]), document
