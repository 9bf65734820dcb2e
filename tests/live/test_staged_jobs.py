"""Jobs with files on the live testbed, through the REST API (issue 4, item 6): inputs
uploaded to the gateway (one of 200 MiB) and one copied from another site, staged over
SFTP and verified on the site; output globs collected, fetched and verified; paths and
symlinks that leave the job directory refused at both ends. With the sites' own identity
modes and again with certificates (alice and bob each their own account)."""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testbed.state import TestbedInfo
from tests.live.gateway import MODES, LiveGateway, live_gateway

MIB = 1 << 20


@pytest.fixture(scope="module", params=MODES)
def gw(testbed: TestbedInfo, tmp_path_factory: pytest.TempPathFactory,
       request: pytest.FixtureRequest) -> Iterator[LiveGateway]:
    with live_gateway(testbed, ("roadrunner", "galaxy"), tmp_path_factory.mktemp("stg"),
                      certificates=request.param == "certificates") as gw:
        yield gw


@pytest.fixture
def big_file() -> Iterator[tuple[Path, str]]:
    """200 MiB of random bytes on tmpfs, with its sha256."""
    path = Path("/dev/shm") / f"gw-staged-{secrets.token_hex(4)}"
    digest = hashlib.sha256()
    with open(path, "wb") as out:
        for _ in range(25):
            block = os.urandom(8 * MIB)
            digest.update(block)
            out.write(block)
    yield path, digest.hexdigest()
    path.unlink()


def _shell_job(site: str, script: str, **extra: Any) -> dict[str, Any]:
    return {"name": "staged", "site": site, "executable": "/bin/sh", "args": ["-c", script],
            "resources": {"walltime": 300}, **extra}


def _states(gw: LiveGateway, headers: dict[str, str], job_id: str) -> list[str]:
    r = gw.client.get(f"/api/v1/jobs/{job_id}/events", headers=headers)
    # State changes only: a routing decision is an event that changes no state.
    return [e["to_state"] for e in r.json()["items"] if e["from_state"] != e["to_state"]]


def _files(gw: LiveGateway, headers: dict[str, str], job_id: str) -> list[dict[str, Any]]:
    r = gw.client.get(f"/api/v1/jobs/{job_id}/outputs", headers=headers)
    assert r.status_code == 200, r.text
    items: list[dict[str, Any]] = r.json()["items"]
    return items


def test_three_inputs_and_fetched_outputs(gw: LiveGateway, tmp_path: Path,
                                          big_file: tuple[Path, str]) -> None:
    headers = gw.token()
    # A file made at galaxy (Grid Engine) by an earlier job of the same user.
    seed_id = gw.submit(headers, _shell_job(
        "galaxy", "head -c 1000003 /dev/urandom > seed.bin && sha256sum seed.bin && pwd"))
    seed = gw.until_final(seed_id)
    assert seed["state"] == "COMPLETED", seed
    seed_sha, _, seed_dir = gw.output(seed_id).split()

    big_path, big_sha = big_file
    small = tmp_path / "small.txt"
    small.write_bytes(b"x; touch /tmp/pwned $(id)\nsecond line\n")
    small_sha = hashlib.sha256(small.read_bytes()).hexdigest()
    big_id = gw.upload(headers, big_path, big_sha)
    small_id = gw.upload(headers, small, small_sha)

    job_id = gw.submit(headers, _shell_job(
        "roadrunner",
        "mkdir -p out && sha256sum in/big.bin in/small.txt in/seed.bin > out/sums.txt "
        "&& cp in/small.txt out/small-copy.txt && head -c 5000000 in/big.bin > out/head.bin "
        "&& stat -c '%a %n' . in in/big.bin > out/modes.txt",
        inputs=[{"source": f"upload:{big_id}", "dest": "in/big.bin"},
                {"source": f"upload:{small_id}", "dest": "in/small.txt"},
                {"source": f"site://galaxy{seed_dir}/seed.bin", "dest": "in/seed.bin"}],
        outputs=["out/*"]))
    job = gw.until_final(job_id, deadline=600)
    assert job["state"] == "COMPLETED", job
    states = _states(gw, headers, job_id)
    assert states[:3] == ["ACCEPTED", "STAGING_IN", "QUEUED"], states
    assert states[-2:] == ["STAGING_OUT", "COMPLETED"], states

    files = {f["path"]: f for f in _files(gw, headers, job_id)}
    assert sorted(files) == ["out/head.bin", "out/modes.txt", "out/small-copy.txt",
                             "out/sums.txt"]
    got: dict[str, bytes] = {}
    for path, item in files.items():
        r = gw.client.get(f"/api/v1/jobs/{job_id}/outputs/{path}", headers=headers)
        assert r.status_code == 200, r.text
        assert hashlib.sha256(r.content).hexdigest() == item["sha256"]
        assert len(r.content) == item["size"] and item["location"] == "gateway"
        got[path] = r.content
    sums = dict(line.split()[::-1] for line in got["out/sums.txt"].decode().splitlines())
    assert sums == {"in/big.bin": big_sha, "in/small.txt": small_sha, "in/seed.bin": seed_sha}
    assert got["out/small-copy.txt"] == small.read_bytes()  # user text stayed data
    assert got["out/head.bin"] == big_path.read_bytes()[:5000000]
    assert got["out/modes.txt"].decode().split() == ["700", ".", "700", "in", "600",
                                                     "in/big.bin"]
    assert not Path("/tmp/pwned").exists()

    # Another job with the same big input: served by roadrunner's cache, not sent again.
    again = gw.submit(headers, _shell_job(
        "roadrunner", "sha256sum in/big.bin",
        inputs=[{"source": f"upload:{big_id}", "dest": "in/big.bin"}]))
    assert gw.until_final(again, deadline=300)["state"] == "COMPLETED"
    assert gw.output(again).split()[0] == big_sha
    r = gw.client.get(f"/api/v1/jobs/{again}/events", headers=headers)
    queued = next(e for e in r.json()["items"] if e["to_state"] == "QUEUED")
    assert "0 bytes sent, 1 from the site's cache" in queued["reason"], queued


@pytest.mark.parametrize("site", ["roadrunner", "galaxy"])
def test_paths_and_symlinks_leaving_the_job_are_refused(gw: LiveGateway, site: str) -> None:
    alice, mallory = gw.token("alice"), gw.token("bob")
    for dest in ("../escape.txt", "/etc/cron.d/x", "in/\u0000nul", "in/../../x"):
        r = gw.client.post("/api/v1/jobs", headers=mallory, json=_shell_job(
            site, "true", inputs=[{"source": "upload:00000000-0000-0000-0000-000000000000",
                                   "dest": dest}]))
        assert r.status_code == 422, (dest, r.text)
        assert "inputs[0].dest" in r.text, r.text
    for glob in ("../*", "/etc/*"):
        r = gw.client.post("/api/v1/jobs", headers=mallory,
                           json=_shell_job(site, "true", outputs=[glob]))
        assert r.status_code == 422, (glob, r.text)

    secret_id = gw.submit(alice, _shell_job(site, "echo alice-secret > secret.txt && pwd"))
    assert gw.until_final(secret_id)["state"] == "COMPLETED"
    alice_dir = gw.output(secret_id).strip()
    # Mallory's job plants links to /etc/passwd and into Alice's job directory.
    plant = ('mkdir out && ln -s /etc/passwd out/passwd && ln -s "$1" out/alice '
             '&& ln -s "$1/secret.txt" out/secret.txt && echo mine > out/mine.txt')
    job_id = gw.submit(mallory, {**_shell_job(site, plant, outputs=["out/*", "out/**"]),
                                 "args": ["-c", plant, "plant", alice_dir]})
    job = gw.until_final(job_id)
    assert job["state"] == "COMPLETED", job
    files = _files(gw, mallory, job_id)
    assert [f["path"] for f in files] == ["out/mine.txt"], files
    r = gw.client.get(f"/api/v1/jobs/{job_id}/events", headers=mallory)
    final = r.json()["items"][-1]["reason"]
    assert "out/passwd" in final and "out/secret.txt" in final, final
    # And a site:// input pointing into Alice's job directory fails staging for Mallory.
    steal = gw.submit(mallory, _shell_job(
        site, "cat in/secret.txt",
        inputs=[{"source": f"site://{site}{alice_dir}/secret.txt", "dest": "in/secret.txt"}]))
    job = gw.until_final(steal)
    assert job["state"] == "FAILED" and "STAGE_IN_FAILED" in job["reason"], job
    assert "alice-secret" not in gw.output(steal)
