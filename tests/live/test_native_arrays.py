"""Job arrays sent as ONE native array to the live testbed's real Slurm (issue 16).

A job array of 20 tasks throttled to 4, all at the Slurm site roadrunner, goes to
Slurm as one `sbatch --array=0-19%4`: the scheduler holds one array job named after
the gateway's array (and none under a task's own tag), every task's id is
`<that job>_<its index>`, Slurm keeps the throttle (ArrayTaskThrottle=4), at most 4
tasks run at any sample (on the site and in the API), and every task ends COMPLETED
having seen its own index. roadrunner has 2 cores, so capacity also bounds what runs;
the throttle is proven by Slurm's own record of it.
"""

from __future__ import annotations

import os
import re
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from adapters.batch.adapter import BatchAdapter
from adapters.transport import CommandResult, Transport
from testbed.state import TestbedInfo
from tests.live.gateway import FINAL, LiveGateway, live_gateway
from tests.testbed.fixture import ssh
from tests.waiting_jobs import let_go_at, waits

COMMUNITY = "gwcomm"
SITE = "roadrunner"


def tasks(gw: LiveGateway, headers: dict[str, str], array_id: str) -> list[dict[str, Any]]:
    r = gw.client.get("/api/v1/jobs", params={"array_job_id": array_id, "limit": 500},
                      headers=headers)
    assert r.status_code == 200, r.text
    return sorted(r.json()["items"], key=lambda job: job["array_index"])


def slurm_jobs_named(testbed: TestbedInfo, name: str) -> set[str]:
    """The array or job ids Slurm holds or remembers under this job name."""
    site = testbed.sites[SITE]
    queued = ssh(site, COMMUNITY, ["squeue", "--noheader", "--states=all", f"--name={name}",
                                   "--format=%i"]).stdout.split()
    ended = ssh(site, COMMUNITY, ["sacct", "--noheader", "--parsable2", "--allocations",
                                  "--allusers", f"--name={name}", "--starttime=now-1days",
                                  "--format=JobID"]).stdout.split()
    return {re.sub(r"_.*", "", i) for i in (*queued, *ended)}


class CountingSubmits:
    """The site's real transport, counting the commands that run `sbatch` or `qsub`."""

    def __init__(self, inner: Transport) -> None:
        self.inner = inner
        self.submits = 0

    def run(self, argv: Sequence[str], *, stdin: bytes | None = None,
            timeout: float = 60.0) -> CommandResult:
        if any(os.path.basename(w) in ("sbatch", "qsub") for w in argv):
            self.submits += 1
        return self.inner.run(argv, stdin=stdin, timeout=timeout)

    def put_bytes(self, data: bytes, path: str, *, mode: int = 0o600) -> None:
        self.inner.put_bytes(data, path, mode=mode)

    def read_bytes(self, path: str, offset: int = 0, limit: int = 1 << 20
                   ) -> tuple[bytes, int | None]:
        return self.inner.read_bytes(path, offset, limit)

    def close(self) -> None:
        self.inner.close()


def counting(gw: LiveGateway, site: str) -> CountingSubmits:
    adapter = gw.runtime.sites.get(site).adapter
    assert isinstance(adapter, BatchAdapter)
    counter = CountingSubmits(adapter.transport)
    adapter.transport = counter
    return counter


def test_slurm_array_of_20_throttled_to_4_runs_as_one_native_array(
        testbed: TestbedInfo, tmp_path: Path) -> None:
    site = testbed.sites[SITE]
    with live_gateway(testbed, (SITE,), tmp_path) as gw:
        headers = gw.token()
        counter = counting(gw, SITE)
        # The tasks wait to be let go, once one has been seen running at the site.
        go = f"/tmp/go-sweep-{uuid.uuid4().hex[:8]}"
        first = gw.submit(headers, {
            "name": "sweep; $(touch /tmp/pwned-array)", "site": SITE,
            "executable": "/bin/sh",
            "args": ["-c", waits('echo "$GRIDGATE_ARRAY_TASK_ID $SLURM_ARRAY_TASK_ID '
                                 '$GRIDGATE_ARRAY_TASK_COUNT $PWD"', go=go)],
            "array": "0-19%4", "resources": {"walltime": 120}})
        array_id = gw.job(first)["array_job_id"]
        most_site = 0
        found: list[dict[str, Any]] = []
        base = None
        for _ in range(400):
            gw.worker.run_once()
            found = tasks(gw, headers, array_id)
            natives = {j["attempts"][0]["native_id"] for j in found if j["attempts"]
                       and j["attempts"][0]["native_id"]}
            if natives and base is None:
                base = next(iter(natives)).split("_")[0]
            if base is not None:
                running = ssh(site, COMMUNITY, ["squeue", "--noheader", f"--jobs={base}",
                                                "--states=RUNNING", "--format=%i"]).stdout
                most_site = max(most_site, len(running.split()))
                if most_site:
                    let_go_at(site, go)
            if all(j["state"] in FINAL for j in found):
                break
        assert len(found) == 20 and all(j["state"] == "COMPLETED" for j in found), found
        # The throttle is the scheduler's, counted at the site. The gateway's own RUNNING
        # count may exceed it (seen: 6): a task that ended stays RUNNING there until polled.
        assert 1 <= most_site <= 4, most_site
        # One submission: one sbatch, one Slurm job for the whole array, none under a
        # task's tag.
        assert counter.submits == 1
        assert base is not None
        assert slurm_jobs_named(testbed, f"gw-{array_id}") == {base}
        for job in (found[0], found[7], found[19]):
            assert slurm_jobs_named(testbed, f"gw-{job['id']}") == set()
        shown = ssh(site, COMMUNITY, ["scontrol", "show", "job", f"{base}_0"]).stdout
        assert "ArrayTaskThrottle=4" in shown, shown
        for job in found:
            index = job["array_index"]
            assert len(job["attempts"]) == 1, job
            assert job["attempts"][0]["native_id"] == f"{base}_{index}"
            out = gw.client.get(f"/api/v1/jobs/{job['id']}/logs/stdout", headers=headers)
            assert out.status_code == 200, out.text
            index_text, slurm_index, count, pwd = out.text.split()
            assert (index_text, slurm_index, count) == (str(index), str(index), "20")
            assert pwd.endswith(f"/gw-{array_id}/{index}")
        assert not Path("/tmp/pwned-array").exists()


def sge_jobs_named(testbed: TestbedInfo, name: str) -> set[str]:
    """Job numbers Grid Engine holds (qstat) or remembers (qacct) under this name."""
    site = testbed.sites["galaxy"]
    listing = ssh(site, COMMUNITY, ["qstat", "-xml", "-u", "*"]).stdout
    found = {(job.findtext("JB_job_number") or "").strip()
             for job in ET.fromstring(listing).iter("job_list")
             if (job.findtext("JB_name") or "").strip() == name}
    accounted = ssh(site, COMMUNITY, ["qacct", "-j", name], check=False).stdout
    found |= {line.split()[1] for line in accounted.splitlines()
              if line.startswith("jobnumber")}
    return found


def test_grid_engine_array_runs_as_one_native_array(testbed: TestbedInfo,
                                                     tmp_path: Path) -> None:
    """Grid Engine numbers tasks from 1: task `i` of the array runs as SGE task `i + 1`
    and still sees its own index; one `qsub -t 1-6 -tc 2`."""
    with live_gateway(testbed, ("galaxy",), tmp_path) as gw:
        headers = gw.token()
        counter = counting(gw, "galaxy")
        first = gw.submit(headers, {
            "name": "sge sweep", "site": "galaxy", "executable": "/bin/sh",
            "args": ["-c", 'sleep 1; echo "$GRIDGATE_ARRAY_TASK_ID $SGE_TASK_ID"'],
            "array": "0-5%2", "resources": {"walltime": 120}})
        array_id = gw.job(first)["array_job_id"]
        most = 0
        found: list[dict[str, Any]] = []
        for _ in range(400):
            gw.worker.run_once()
            found = tasks(gw, headers, array_id)
            most = max(most, sum(j["state"] == "RUNNING" for j in found))
            if all(j["state"] in FINAL for j in found):
                break
        assert len(found) == 6 and all(j["state"] == "COMPLETED" for j in found), found
        assert most <= 2, most
        assert counter.submits == 1
        natives = [j["attempts"][0]["native_id"] for j in found]
        base = natives[0].split(".")[0]
        assert natives == [f"{base}.{i + 1}" for i in range(6)]
        assert sge_jobs_named(testbed, f"gw-{array_id}") == {base}
        for job in found:
            out = gw.client.get(f"/api/v1/jobs/{job['id']}/logs/stdout", headers=headers)
            assert out.text == f"{job['array_index']} {job['array_index'] + 1}\n", out.text


def test_slurm_keeps_a_native_arrays_throttle_below_the_sites_capacity(
        testbed: TestbedInfo, tmp_path: Path) -> None:
    """roadrunner's 2 cores could run 2 tasks at once: with `%1`, Slurm runs one, the
    others pending with the reason JobArrayTaskLimit."""
    site = testbed.sites[SITE]
    with live_gateway(testbed, (SITE,), tmp_path) as gw:
        headers = gw.token()
        # The tasks wait to be let go, once Slurm has been seen holding the others back.
        go = f"/tmp/go-one-{uuid.uuid4().hex[:8]}"
        first = gw.submit(headers, {
            "name": "one at a time", "site": SITE, "executable": "/bin/sh",
            "args": ["-c", waits(go=go)], "array": "0-3%1", "resources": {"walltime": 120}})
        array_id = gw.job(first)["array_job_id"]
        most, reasons = 0, set()
        found: list[dict[str, Any]] = []
        for _ in range(400):
            gw.worker.run_once()
            found = tasks(gw, headers, array_id)
            natives = [j["attempts"][0]["native_id"] for j in found
                       if j["attempts"] and j["attempts"][0]["native_id"]]
            if natives:
                listing = ssh(site, COMMUNITY, [
                    "squeue", "--noheader", f"--jobs={natives[0].split('_')[0]}",
                    "--format=%T|%r"]).stdout.split()
                most = max(most, sum(line.startswith("RUNNING|") for line in listing))
                reasons |= {line.split("|")[1] for line in listing
                            if line.startswith("PENDING|")}
                if most and "JobArrayTaskLimit" in reasons:
                    let_go_at(site, go)
            if all(j["state"] in FINAL for j in found):
                break
        assert [j["state"] for j in found] == ["COMPLETED"] * 4, found
        assert most == 1, most
        assert "JobArrayTaskLimit" in reasons, reasons
