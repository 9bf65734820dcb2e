"""Faults on the live testbed, seen through the REST API: walltime kills, scheduler
rejections, cancels of queued and running jobs, a changed host key, an sshd outage.

Every scheduler scenario runs on both community sites at once (roadrunner: Slurm, galaxy:
Grid Engine) so the slow parts (a walltime kill) overlap. The host key and sshd tests
break a site on purpose, so they run on a testbed of their own, never the session one.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from gateway.api.app import create_app
from gateway.runtime import Runtime, build_runtime
from gateway.settings import Settings
from gateway.testbed import faults, manager
from gateway.testbed.config import TestbedConfig
from gateway.testbed.state import TestbedInfo
from gateway.worker.loop import Worker
from tests.conftest import ALL_SCOPES
from tests.testbed.fixture import running_testbed, ssh, unique_config

SITES = ("roadrunner", "galaxy")
FINAL = ("COMPLETED", "FAILED", "CANCELLED")
Job = dict[str, Any]


class Api:
    """A Runtime over some testbed sites, its TestClient, a user's headers and a worker."""

    def __init__(self, runtime: Runtime, client: TestClient) -> None:
        self.runtime, self.client = runtime, client
        self.headers = _token(runtime)
        self.worker = Worker(runtime)

    def submit(self, **spec: Any) -> str:
        r = self.client.post("/api/v1/jobs", headers=self.headers, json=spec)
        assert r.status_code == 202, r.text
        job_id: str = r.json()["id"]
        return job_id

    def job(self, job_id: str) -> Job:
        r = self.client.get(f"/api/v1/jobs/{job_id}", headers=self.headers)
        assert r.status_code == 200, r.text
        job: Job = r.json()
        return job

    def sites(self) -> dict[str, dict[str, Any]]:
        r = self.client.get("/api/v1/sites", headers=self.headers)
        assert r.status_code == 200, r.text
        return {s["name"]: s for s in r.json()["items"]}

    def until(self, job_ids: list[str], done: Callable[[Job], bool],
              deadline: float = 240) -> dict[str, Job]:
        """Run worker cycles until `done` holds for every job; the jobs as the API shows them."""
        end = time.monotonic() + deadline
        while True:
            self.worker.run_once()
            jobs = {i: self.job(i) for i in job_ids}
            if all(done(j) for j in jobs.values()):
                return jobs
            if time.monotonic() > end:
                raise AssertionError(f"jobs not there after {deadline:.0f}s: {jobs}")
            time.sleep(0.5)

    def until_final(self, job_ids: list[str], deadline: float = 240) -> dict[str, Job]:
        return self.until(job_ids, lambda j: j["state"] in FINAL, deadline)


def _token(runtime: Runtime) -> dict[str, str]:
    from gateway.auth.tokens import issue_access_token
    from gateway.db.engine import transaction
    from gateway.services.accounts import create_local_user

    with transaction(runtime.sessions) as session:
        user = create_local_user(session, f"fault{time.monotonic_ns() % 10**8}",
                                 "correct horse battery")
        user_id, name = user.id, user.username
    token = issue_access_token(runtime.settings, runtime.keys, subject=user_id,
                               client_id="tests", scope=ALL_SCOPES, username=name).token
    return {"Authorization": f"Bearer {token}"}


@contextlib.contextmanager
def _gateway(site_configs: str, sites: tuple[str, ...], base: Path) -> Iterator[Api]:
    """A gateway over copies of the given sites' configs (the copies keep today's host keys)."""
    configs = base / "site-configs"
    configs.mkdir()
    for name in sites:
        shutil.copy(Path(site_configs) / f"{name}.yaml", configs)
    settings = Settings(data_dir=base / "data", database_url=f"sqlite:///{base / 'gw.db'}",
                        site_configs_dir=configs, run_worker=False,
                        public_url="http://gateway.test")
    runtime = build_runtime(settings)
    try:
        with TestClient(create_app(runtime=runtime)) as client:
            yield Api(runtime, client)
    finally:
        runtime.close()


@pytest.fixture(scope="module")
def api(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with _gateway(testbed.site_configs, SITES, tmp_path_factory.mktemp("faults")) as gw:
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


# --- scheduler-side faults (session testbed) -------------------------------------------

def test_job_outrunning_its_walltime_fails_with_timeout(api: Api) -> None:
    # Slurm's --time has minute granularity (60 s is its least); Grid Engine's h_rt is
    # in seconds. slurmctld checks limits every 30 s, so the Slurm kill takes 60-95 s.
    ids = {"roadrunner": api.submit(**_sleep_job("roadrunner", 600, 60)),
           "galaxy": api.submit(**_sleep_job("galaxy", 600, 5))}
    jobs = api.until_final(list(ids.values()), deadline=300)
    for site, job_id in ids.items():
        job = jobs[job_id]
        assert job["state"] == "FAILED" and job["state_reason"] == "TIMEOUT", (site, job)
        assert job["attempts"][0]["native_id"], job


def test_unknown_partition_fails_with_the_schedulers_message(api: Api) -> None:
    ids = {site: api.submit(**_sleep_job(site, 1, 60, partition="nosuch")) for site in SITES}
    jobs = api.until_final(list(ids.values()), deadline=120)
    said = {site: jobs[i]["state_reason"] or "" for site, i in ids.items()}
    for site, job_id in ids.items():
        job = jobs[job_id]
        assert job["state"] == "FAILED", job
        assert said[site].startswith("SUBMIT_REJECTED: "), job
        assert job["attempts"][0]["native_id"] is None, job
    # The scheduler's own words, not a paraphrase.
    assert "invalid partition" in said["roadrunner"].lower(), said
    assert "nosuch" in said["galaxy"] and "queue" in said["galaxy"].lower(), said


def test_cancel_of_a_queued_and_of_a_running_job(api: Api) -> None:
    # A two-core job fills each one-node, two-core site; a one-core job then has to wait.
    fillers = {site: api.submit(**_sleep_job(
        site, 600, 900, resources={"walltime": 900, "threads_per_rank": 2})) for site in SITES}
    running = api.until(list(fillers.values()),
                        lambda j: j["state"] == "RUNNING" or j["state"] in FINAL)
    assert all(j["state"] == "RUNNING" for j in running.values()), running
    waiters = {site: api.submit(**_sleep_job(site, 1, 60)) for site in SITES}
    queued = api.until(list(waiters.values()),
                       lambda j: j["state"] == "QUEUED" or j["state"] in FINAL)
    assert all(j["state"] == "QUEUED" for j in queued.values()), queued

    for job_id in [*waiters.values(), *fillers.values()]:
        r = api.client.post(f"/api/v1/jobs/{job_id}/cancel", headers=api.headers)
        assert r.status_code == 202, r.text
    jobs = api.until_final([*waiters.values(), *fillers.values()], deadline=120)
    for job in jobs.values():
        assert job["state"] == "CANCELLED", job
        assert job["state_reason"] == "cancelled by user", job
        assert job["cancel_requested"] is True


# --- transport faults (a testbed of their own) -----------------------------------------

def test_sshd_outage_leaves_jobs_right_and_the_api_up(
        own_testbed: tuple[TestbedConfig, TestbedInfo], tmp_path: Path) -> None:
    # The outage lasts 20 s (not a minute) to keep the suite short.
    config, info = own_testbed
    with _gateway(info.site_configs, ("roadrunner",), tmp_path) as gw:
        job_id = gw.submit(**_sleep_job("roadrunner", 30, 300))
        gw.until([job_id], lambda j: j["state"] == "RUNNING" or j["state"] in FINAL)
        assert gw.job(job_id)["state"] == "RUNNING"
        faults.stop_daemon(config, "roadrunner", "sshd")
        try:
            end = time.monotonic() + 20
            while time.monotonic() < end:
                gw.worker.run_once()  # fails for roadrunner: the cycle must carry on
                assert gw.client.get("/health").status_code == 200
                assert gw.job(job_id)["state"] == "RUNNING"
                time.sleep(1)
            site = gw.sites()["roadrunner"]
            assert site["status"] == "down" and site["status_reason"], site
        finally:
            manager.up(config)  # starts sshd again, with the same host key
        job = gw.until_final([job_id], deadline=180)[job_id]
        assert job["state"] == "COMPLETED" and job["exit_code"] == 0, job
        assert gw.sites()["roadrunner"]["status"] == "up"


def test_changed_host_key_takes_the_site_down_and_submits_nothing(
        own_testbed: tuple[TestbedConfig, TestbedInfo], tmp_path: Path) -> None:
    config, info = own_testbed
    with _gateway(info.site_configs, ("roadrunner",), tmp_path) as gw:
        first = gw.submit(**_sleep_job("roadrunner", 1, 60))
        assert gw.until_final([first])[first]["state"] == "COMPLETED"
        assert gw.sites()["roadrunner"]["status"] == "up"

        rotated = faults.rotate_host_key(config, "roadrunner")
        job_id = gw.submit(**_sleep_job("roadrunner", 1, 60))
        for _ in range(3):
            gw.worker.run_once()
        site = gw.sites()["roadrunner"]
        assert site["status"] == "down", site
        assert "host key" in site["status_reason"] and "pinned" in site["status_reason"], site
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
