"""Faults on the live testbed, seen through the REST API: walltime kills, scheduler
rejections, cancels of queued and running jobs, a changed host key, an sshd outage.

Every scheduler scenario runs on all three sites at once (roadrunner and parnass2: Slurm,
galaxy: Grid Engine) so the slow parts (a walltime kill) overlap. The host key and sshd
tests break a site on purpose, so they run on a testbed of their own, never the session one.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed import faults, manager
from testbed.config import TestbedConfig
from testbed.state import TestbedInfo
from tests.live.gateway import FINAL, MODES, LiveGateway, live_gateway
from tests.testbed.fixture import running_testbed, ssh, unique_config
from tests.waiting_jobs import let_go_at, waits

# Site -> who submits there (parnass2 maps gateway users to their own accounts).
SITES: dict[str, str | None] = {"roadrunner": None, "galaxy": None, "parnass2": "alice"}
SSHD_OUTAGE_SECONDS = 60


@pytest.fixture(scope="module")
def gw(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with live_gateway(testbed, tuple(SITES), tmp_path_factory.mktemp("faults")) as gw:
        yield gw


@pytest.fixture(scope="module")
def certificate_gw(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[LiveGateway]:
    """Every site a certificate site (alice logs in as gwalice)."""
    with live_gateway(testbed, tuple(SITES), tmp_path_factory.mktemp("faults-certs"),
                      certificates=True) as gw:
        yield gw


@pytest.fixture(scope="module")
def own_testbed() -> Iterator[tuple[TestbedConfig, TestbedInfo]]:
    """A testbed of this module's own: its sites get broken on purpose."""
    config = unique_config()
    with running_testbed(config) as info:
        yield config, info


def _sleep_job(site: str, seconds: int, walltime: int, **extra: Any) -> dict[str, Any]:
    return {"name": f"sleep {seconds}", "site": site, "executable": "/bin/sleep",
            "args": [str(seconds)], "resources": {"walltime": walltime}, **extra}


def _on_every_site(gw: LiveGateway, seconds: int, walltime: int, **extra: Any
                   ) -> dict[str, str]:
    """One sleep job per site, each by that site's user (alice, with certificates);
    site -> job id."""
    return {site: gw.submit(gw.token(user), _sleep_job(site, seconds, walltime, **extra))
            for site, user in SITES.items()}


# --- scheduler-side faults (session testbed) -------------------------------------------

def test_job_outrunning_its_walltime_fails_with_timeout(gw: LiveGateway) -> None:
    # Slurm's --time has minute granularity (60 s is its least); Grid Engine's h_rt is
    # in seconds. slurmctld checks limits every 30 s, so the Slurm kill takes 60-95 s.
    ids = {site: gw.submit(gw.token(user), _sleep_job(site, 600, 5 if site == "galaxy" else 60))
           for site, user in SITES.items()}
    jobs = gw.until(list(ids.values()), lambda j: j["state"] in FINAL, deadline=300)
    for site, job_id in ids.items():
        job = jobs[job_id]
        assert job["state"] == "FAILED" and job["reason"] == "TIMEOUT", (site, job)
        assert job["attempts"][0]["native_id"], job


def test_unknown_partition_fails_with_the_schedulers_message(gw: LiveGateway) -> None:
    ids = _on_every_site(gw, 1, 60, partition="nosuch")
    jobs = gw.until(list(ids.values()), lambda j: j["state"] in FINAL, deadline=120)
    said = {site: jobs[i]["reason"] or "" for site, i in ids.items()}
    for site, job_id in ids.items():
        job = jobs[job_id]
        assert job["state"] == "FAILED", job
        assert said[site].startswith("SUBMIT_REJECTED: "), job
        assert job["attempts"][0]["native_id"] is None, job
    # The scheduler's own words, not a paraphrase.
    assert "invalid partition" in said["roadrunner"].lower(), said
    assert "invalid partition" in said["parnass2"].lower(), said
    assert "nosuch" in said["galaxy"] and "queue" in said["galaxy"].lower(), said


def test_a_burst_goes_in_one_command_per_site_and_a_refusal_stays_alone(
        gw: LiveGateway) -> None:
    """Several plain jobs accepted at once reach each site in one batch command; the one
    the scheduler refuses fails with its own words, the others run."""
    ids: dict[str, list[str]] = {}
    for site, user in SITES.items():
        headers = gw.token(user)
        ids[site] = [gw.submit(headers, {
            "name": f"burst {n}; echo $(id)", "site": site, "executable": "/bin/echo",
            "args": [f"job {n}", "$(id)"], "resources": {"walltime": 60}}) for n in range(4)]
        ids[site].insert(2, gw.submit(headers, _sleep_job(site, 1, 60, partition="nosuch")))
    commands: list[str] = []
    for site in SITES:
        adapter: Any = gw.runtime.sites.get(site).adapter_for(SITES[site])
        inner = adapter.transport

        def spy(argv: Any, *, _inner: Any = inner, **kw: Any) -> Any:
            commands.append(" ".join(argv[:3]))
            return _inner.run(argv, **kw)
        adapter.transport = _Spy(inner, spy)
    try:
        gw.worker.run_once()
    finally:
        for site in SITES:
            adapter = gw.runtime.sites.get(site).adapter_for(SITES[site])
            adapter.transport = adapter.transport.inner
    assert sum("gw-submit" in c for c in commands) == len(SITES), commands
    everything = [job_id for site_ids in ids.values() for job_id in site_ids]
    jobs = gw.until(everything, lambda j: j["state"] in FINAL, deadline=180)
    for site, site_ids in ids.items():
        refused = jobs[site_ids.pop(2)]
        assert refused["state"] == "FAILED", refused
        assert refused["reason"].startswith("SUBMIT_REJECTED: "), refused
        for n, job_id in enumerate(site_ids):
            assert jobs[job_id]["state"] == "COMPLETED", (site, jobs[job_id])
            assert gw.output(job_id) == f"job {n} $(id)\n"


class _Spy:
    """The transport, with `run` going through `spy` first."""

    def __init__(self, inner: Any, spy: Any) -> None:
        self.inner, self.run = inner, spy

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@pytest.mark.parametrize("mode", MODES)
def test_cancel_of_a_queued_and_of_a_running_job(mode: str,
                                                 request: pytest.FixtureRequest) -> None:
    gw: LiveGateway = request.getfixturevalue(
        "certificate_gw" if mode == "certificates" else "gw")
    # A two-core job fills each one-node, two-core site; a one-core job then has to wait.
    fillers = _on_every_site(gw, 600, 900,
                             resources={"walltime": 900, "threads_per_rank": 2})
    running = gw.until(list(fillers.values()),
                       lambda j: j["state"] == "RUNNING" or j["state"] in FINAL)
    assert all(j["state"] == "RUNNING" for j in running.values()), running
    waiters = _on_every_site(gw, 1, 60)
    queued = gw.until(list(waiters.values()),
                      lambda j: j["state"] == "QUEUED" or j["state"] in FINAL)
    assert all(j["state"] == "QUEUED" for j in queued.values()), queued

    for job_id in [*waiters.values(), *fillers.values()]:
        gw.cancel(job_id)
    jobs = gw.until([*waiters.values(), *fillers.values()],
                    lambda j: j["state"] in FINAL, deadline=120)
    for job in jobs.values():
        assert job["state"] == "CANCELLED", job
        assert job["reason"] == "cancelled by user", job
        assert job["cancel_requested"] is True


# --- transport faults (a testbed of their own) -----------------------------------------

def test_sshd_outage_leaves_jobs_right_and_the_api_up(
        own_testbed: tuple[TestbedConfig, TestbedInfo], tmp_path: Path) -> None:
    config, info = own_testbed
    with live_gateway(info, ("roadrunner",), tmp_path) as gw:
        # Runs into the outage and ends during it (let go through the site's holder, no
        # ssh needed); the gateway learns so afterwards.
        go = f"/tmp/go-outage-{uuid.uuid4().hex[:8]}"
        job_id = gw.submit(gw.token(), {"name": "waiting", "site": "roadrunner",
                                        "executable": "/bin/sh", "args": ["-c", waits(go=go)],
                                        "resources": {"walltime": 300}})
        gw.until([job_id], lambda j: j["state"] == "RUNNING" or j["state"] in FINAL)
        assert gw.job(job_id)["state"] == "RUNNING"
        faults.stop_daemon(config, "roadrunner", "sshd")
        let_go_at(info.sites["roadrunner"], go)
        try:
            end = time.monotonic() + SSHD_OUTAGE_SECONDS
            while time.monotonic() < end:
                gw.worker.run_once()  # fails for roadrunner: the cycle must carry on
                assert gw.client.get("/health").status_code == 200
                assert gw.job(job_id)["state"] == "RUNNING"
                time.sleep(1)
            site = gw.sites()["roadrunner"]
            assert site["state"] == "down" and site["reason"], site
        finally:
            manager.up(config)  # starts sshd again, with the same host key
        job = gw.until_final(job_id, deadline=180)
        assert job["state"] == "COMPLETED" and job["exit_code"] == 0, job
        assert gw.sites()["roadrunner"]["state"] == "up"


def test_changed_host_key_takes_the_site_down_and_submits_nothing(
        own_testbed: tuple[TestbedConfig, TestbedInfo], tmp_path: Path) -> None:
    config, info = own_testbed
    with live_gateway(info, ("roadrunner",), tmp_path) as gw:
        headers = gw.token()
        first = gw.submit(headers, _sleep_job("roadrunner", 1, 60))
        assert gw.until_final(first)["state"] == "COMPLETED"
        assert gw.sites()["roadrunner"]["state"] == "up"

        rotated = faults.rotate_host_key(config, "roadrunner")
        job_id = gw.submit(headers, _sleep_job("roadrunner", 1, 60))
        for _ in range(3):
            gw.worker.run_once()
        site = gw.sites()["roadrunner"]
        assert site["state"] == "down", site
        assert "host key" in site["reason"] and "pinned" in site["reason"], site
        job = gw.job(job_id)
        assert job["state"] not in FINAL, job
        assert all(a["native_id"] is None for a in job["attempts"]), job
        # Nothing reached the scheduler: ask it over a connection pinning the new key.
        tag = f"gw-{job_id}"
        names = ssh(rotated.sites["roadrunner"], "gwcomm",
                    ["squeue", "--all", "--noheader", "--users=gwcomm", "--format=%j"]).stdout
        history = ssh(rotated.sites["roadrunner"], "gwcomm",
                      ["sacct", "--noheader", "--allocations", "--parsable2",
                       "--starttime=now-1hours", f"--name={tag}", "--format=JobID"]).stdout
        assert tag not in names.split() and history.strip() == "", (names, history)
