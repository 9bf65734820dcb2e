"""Containerised MPI on the live testbed (issue 15), through the REST API and the worker.

The image is the one examples/container-pingpong/build-image.sh builds: the seed ping-pong
compiled against this host's MPICH, with that MPICH inside, in a SIF made by `gridgate
image build`. It runs in hybrid mode (the site's mpirun starts one ch-run container per
rank) with 2 ranks on roadrunner (Slurm) and galaxy (Grid Engine), and its latency and
bandwidth lines come back as an output file. A second job with the same image at the same
site sends no bytes, and two jobs wanting a new image at once send it once (the stage-in
record of each job says what it sent). `jobs:estimate` names the sites that can run the
image and why parnass2 cannot. The same build with Open MPI is refused at submit (both
sites offer MPICH only), and a SIF whose bytes no longer match its digest is never run.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from testbed.state import TestbedInfo
from tests.live.gateway import FINAL, LiveGateway, live_gateway

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "examples" / "container-pingpong" / "build-image.sh"
EXAMPLE = BUILD.with_name("job.yaml")
SITES = ("roadrunner", "galaxy")
MAX_BYTES = 1 << 20
# Short batches keep one run to a few seconds on a shared 2-core machine.
PINGPONG_ARGS = ["--max-bytes", str(MAX_BYTES), "--target-seconds", "0.001",
                 "--batches", "3", "--max-repetitions", "2000", "--out", "results.jsonl"]

# The stage-in summary in an event's reason (gateway.worker.staging.stage_in.StageInSummary).
STAGED = re.compile(r"staged 1 input\(s\), (?P<sent>[^,]+) sent, (?P<cached>\d+) from the "
                    r"site's cache")


def build_image(output: Path, mpicc: str = "mpicc.mpich") -> Path:
    """The example's image, built with `mpicc` (its MPI goes into the image)."""
    gridgate = Path(sys.executable).with_name("gridgate")
    done = subprocess.run(["bash", str(BUILD), str(output)], capture_output=True, text=True,
                          timeout=300, check=False,
                          env={**os.environ, "MPICC": mpicc, "GRIDGATE": str(gridgate)})
    assert done.returncode == 0, done.stderr
    return output


def upload(gw: LiveGateway, headers: dict[str, str], path: Path) -> str:
    """`path` uploaded through the REST API in one piece; its `upload:<id>` reference."""
    data = path.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    r = gw.client.post("/api/v1/uploads", headers=headers,
                       json={"name": path.name, "size": len(data), "sha256": sha})
    assert r.status_code == 201, r.text
    upload_id: str = r.json()["id"]
    r = gw.client.put(f"/api/v1/uploads/{upload_id}", content=data, headers={
        **headers, "Content-Range": f"bytes 0-{len(data) - 1}/{len(data)}"})
    assert r.status_code == 200, r.text
    r = gw.client.post(f"/api/v1/uploads/{upload_id}/complete", headers=headers, json={})
    assert r.status_code == 200, r.text
    return f"upload:{upload_id}"


def pingpong_job(site: str, image: str) -> dict[str, Any]:
    """The example's job (examples/container-pingpong/job.yaml: 2 ranks in hybrid mode; the
    image's MPI is read from it) at `site`, with shorter batches."""
    spec: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    spec["container"]["image"] = image
    return {**spec, "site": site, "args": PINGPONG_ARGS}


@pytest.fixture(scope="module")
def gw(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    # parnass2 offers no container runtime: routing leaves it out, with that reason.
    with live_gateway(testbed, (*SITES, "parnass2"), tmp_path_factory.mktemp("ctr")) as gw:
        yield gw


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    where = tmp_path_factory.mktemp("images")
    return {"mpich": build_image(where / "pingpong.sif"),
            "openmpi": build_image(where / "openmpi.sif", "mpicc.openmpi")}


def staged(gw: LiveGateway, job_id: str) -> tuple[str, int]:
    """What the job's stage-in sent and how many files the site's cache served, from the
    reason of its move to QUEUED (the stage-in record)."""
    r = gw.client.get(f"/api/v1/jobs/{job_id}/events", headers=gw.owner(job_id))
    assert r.status_code == 200, r.text
    reasons = [e["reason"] for e in r.json()["items"] if e["to_state"] == "QUEUED"]
    assert len(reasons) == 1, r.json()
    found = STAGED.search(reasons[0])
    assert found, reasons[0]
    return found["sent"], int(found["cached"])


def results(gw: LiveGateway, job_id: str) -> list[dict[str, Any]]:
    """The job's results.jsonl output, fetched from the gateway and parsed."""
    r = gw.client.get(f"/api/v1/jobs/{job_id}/outputs/results.jsonl",
                      headers=gw.owner(job_id))
    assert r.status_code == 200, r.text
    return [json.loads(line) for line in r.text.splitlines()]


@pytest.mark.parametrize("site", SITES)
def test_the_container_pingpong_runs_and_a_second_job_sends_nothing(
        gw: LiveGateway, images: dict[str, Path], site: str) -> None:
    headers = gw.token()
    image = upload(gw, headers, images["mpich"])
    first = gw.submit(headers, pingpong_job(site, image))
    job = gw.until_final(first, deadline=300)
    assert job["state"] == "COMPLETED" and job["exit_code"] == 0, (
        job, gw.output(first, "stderr"))
    # What the gateway read from the image went into the stored spec.
    assert job["spec"]["mpi"]["flavor"] == "mpich", job["spec"]
    records = results(gw, first)
    expected = [0] + [1 << k for k in range(MAX_BYTES.bit_length())]
    assert [r["bytes"] for r in records] == expected, records
    for record in records:
        assert record["repetitions"] >= 10 and record["batches"] == 3, record
        assert 0 < record["half_round_trip_s"] < 1, record
    sent, cached = staged(gw, first)
    assert cached == 0 and sent != "0 bytes", (sent, cached)

    second = gw.submit(headers, pingpong_job(site, image))
    job = gw.until_final(second, deadline=300)
    assert job["state"] == "COMPLETED" and job["exit_code"] == 0, (
        job, gw.output(second, "stderr"))
    assert staged(gw, second) == ("0 bytes", 1)
    assert len(results(gw, second)) == len(expected)


def test_estimate_names_the_sites_that_can_run_the_image_and_why_not_the_others(
        gw: LiveGateway, images: dict[str, Path]) -> None:
    headers = gw.token("alice")  # parnass2 maps its accounts: alice has one there
    spec = pingpong_job("auto", upload(gw, headers, images["mpich"]))
    del spec["site"]
    r = gw.client.post("/api/v1/jobs:estimate", headers=headers, json=spec)
    assert r.status_code == 200, r.text
    excluded = {c["site"]: c["excluded"] for c in r.json()["candidates"]}
    assert excluded["roadrunner"] is None and excluded["galaxy"] is None, excluded
    assert excluded["parnass2"] is not None
    assert "site parnass2 offers no container runtime" in excluded["parnass2"], excluded


def test_an_open_mpi_image_is_refused_at_submit_with_the_reason(
        gw: LiveGateway, images: dict[str, Path]) -> None:
    headers = gw.token()
    image = upload(gw, headers, images["openmpi"])
    for site in (*SITES, None):
        spec = pingpong_job(site or "auto", image)
        if site is None:
            del spec["site"]
        r = gw.client.post("/api/v1/jobs", headers=headers, json=spec)
        assert r.status_code == 422, r.text
        assert r.headers["content-type"] == "application/problem+json"
        detail = r.json()["detail"]
        for name in (site,) if site else SITES:
            assert f"image uses Open MPI 4; site {name} offers MPICH ABI only" in detail, detail


def test_a_damaged_image_is_never_run(gw: LiveGateway, tmp_path: Path) -> None:
    # An image of its own: the gateway keeps what it extracted from an image by digest, so
    # damage to a blob already extracted would never be read again.
    sif = build_image(tmp_path / "damaged.sif")
    data = sif.read_bytes()
    sha = hashlib.sha256(data).hexdigest()
    headers = gw.token()
    job_id = gw.submit(headers, pingpong_job("roadrunner", upload(gw, headers, sif)))
    # Accepted; now its bytes change at rest in the gateway's store (the same size).
    blob = gw.runtime.settings.store_dir / "blobs" / sha[:2] / sha
    middle = len(data) // 2
    with blob.open("r+b") as stream:
        stream.seek(middle)
        stream.write(bytes(b ^ 0xFF for b in data[middle:middle + 4096]))
    job = gw.until_final(job_id, deadline=120)
    assert job["state"] == "FAILED", job
    assert "does not match its digest" in job["reason"] and sha in job["reason"], job
    # Nothing was launched: no attempt ever had a scheduler job id.
    assert all(a["native_id"] is None for a in job["attempts"]), job["attempts"]


def test_two_jobs_wanting_a_new_image_at_once_send_it_once(gw: LiveGateway,
                                                          tmp_path: Path) -> None:
    # A new image (its own digest): neither the store nor the site has it yet. Both jobs
    # are accepted before the worker's first cycle, which stages them side by side (its
    # submit threads); the lock on the cache entry lets one send and the other wait.
    sif = build_image(tmp_path / "fresh.sif")
    headers = gw.token()
    image = upload(gw, headers, sif)
    jobs = [gw.submit(headers, pingpong_job("roadrunner", image)) for _ in range(2)]
    done = gw.until(jobs, lambda j: j["state"] in FINAL, deadline=300)
    assert all(j["state"] == "COMPLETED" for j in done.values()), done
    records = sorted((staged(gw, j) for j in jobs), key=lambda r: r[1])
    assert records[1] == ("0 bytes", 1), records
    assert records[0][1] == 0 and records[0][0] != "0 bytes", records


def test_a_runtime_that_cannot_start_the_program_says_why_in_the_reason(
        gw: LiveGateway, images: dict[str, Path]) -> None:
    # The image lacks the program: each rank's ch-run fails before it starts, and the job's
    # reason carries ch-run's own words from its stderr (containers.runtime_errors).
    headers = gw.token()
    spec = pingpong_job("roadrunner", upload(gw, headers, images["mpich"]))
    spec["executable"] = "/opt/app/not-in-the-image"
    job_id = gw.submit(headers, spec)
    job = gw.until_final(job_id, deadline=300)
    assert job["state"] == "FAILED" and job["exit_code"] != 0, job
    assert ("container runtime: ch-run: can't execve(2): /opt/app/not-in-the-image: "
            "No such file or directory") in job["reason"], (job["reason"],
                                                          gw.output(job_id, "stderr"))
