"""Jobs with inputs and outputs on the local site, driven by a real worker (SQLite and
PostgreSQL): stage-in from an upload and from a site:// path, output globs fetched into
the gateway store and served with Range, keep mode, symlinks planted by the job."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.store import BlobStore
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.staging.helpers import events, run_until, sh, submit, upload

DATA = hashlib.shake_256(b"input").digest(3 * 1024 * 1024 + 17)


def workdir(runtime: Runtime, job_id: str) -> Path:
    return runtime.settings.jobs_dir / f"gw-{job_id}"


def test_inputs_from_an_upload_and_a_site_path_and_fetched_outputs(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    worker = Worker(runtime)
    seed = submit(client, user, sh("echo hello > seed.txt"))
    assert run_until(worker, client, user, seed)["state"] == "COMPLETED"
    upload_id = upload(client, user, DATA)
    seed_path = workdir(runtime, seed) / "seed.txt"
    job_id = submit(client, user, {
        **sh("mkdir -p out && cp seed.txt out/seed-copy.txt && "
             "sha256sum in/data.bin | cut -c1-64 > out/data.sha && echo log > run.log"),
        "inputs": [{"source": f"upload:{upload_id}", "dest": "in/data.bin"},
                   {"source": f"site://local{seed_path}", "dest": "seed.txt"}],
        "outputs": ["out/*", "*.log"]})
    job = run_until(worker, client, user, job_id)
    assert job["state"] == "COMPLETED", job
    history = events(client, user, job_id)
    states = [e["to_state"] for e in history]
    # RUNNING may pass unseen between two polls of a short job.
    assert states[:3] == ["ACCEPTED", "STAGING_IN", "QUEUED"]
    assert states[-2:] == ["STAGING_OUT", "COMPLETED"]
    assert "staged 2 input(s)" in history[2]["reason"]
    assert "collected 3 output(s)" in history[-1]["reason"]

    directory = workdir(runtime, job_id)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert (directory / "in" / "data.bin").read_bytes() == DATA
    listed = client.get(f"/api/v1/jobs/{job_id}/outputs", headers=user.headers).json()["items"]
    assert [(f["path"], f["location"]) for f in listed] == [
        ("out/data.sha", "gateway"), ("out/seed-copy.txt", "gateway"), ("run.log", "gateway")]
    for item in listed:
        r = client.get(f"/api/v1/jobs/{job_id}/outputs/{item['path']}", headers=user.headers)
        assert r.status_code == 200
        assert hashlib.sha256(r.content).hexdigest() == item["sha256"]
        assert len(r.content) == item["size"]
        assert r.headers["x-content-type-options"] == "nosniff"
        assert r.headers["content-disposition"].startswith("attachment;")
        assert r.headers["content-type"] == "application/octet-stream"
    sha_file = client.get(f"/api/v1/jobs/{job_id}/outputs/out/data.sha", headers=user.headers)
    assert sha_file.text.strip() == hashlib.sha256(DATA).hexdigest()
    copy = client.get(f"/api/v1/jobs/{job_id}/outputs/out/seed-copy.txt", headers=user.headers)
    assert copy.text == "hello\n"
    part = client.get(f"/api/v1/jobs/{job_id}/outputs/out/seed-copy.txt",
                      headers={**user.headers, "Range": "bytes=1-3"})
    assert part.status_code == 206 and part.content == b"ell"
    assert part.headers["content-range"] == "bytes 1-3/6"
    suffix = client.get(f"/api/v1/jobs/{job_id}/outputs/out/seed-copy.txt",
                        headers={**user.headers, "Range": "bytes=-2"})
    assert suffix.status_code == 206 and suffix.content == b"o\n"
    beyond = client.get(f"/api/v1/jobs/{job_id}/outputs/out/seed-copy.txt",
                        headers={**user.headers, "Range": "bytes=6-"})
    assert beyond.status_code == 416 and beyond.headers["content-range"] == "bytes */6"
    assert beyond.headers["content-type"] == "application/problem+json"
    missing = client.get(f"/api/v1/jobs/{job_id}/outputs/out/nothing", headers=user.headers)
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"

    other = make_user()
    for url in (f"/api/v1/jobs/{job_id}/outputs", f"/api/v1/jobs/{job_id}/outputs/run.log"):
        r = client.get(url, headers=other.headers)
        assert r.status_code == 404 and r.json()["detail"] == f"No job with id '{job_id}'."


def test_the_same_input_reaches_the_site_once(client: TestClient, runtime: Runtime,
                                              make_user: MakeUser) -> None:
    user = make_user()
    upload_id = upload(client, user, DATA)
    worker = Worker(runtime)
    reasons = []
    for _ in range(2):
        job_id = submit(client, user, {**sh("test -s data"),
                                       "inputs": [{"source": f"upload:{upload_id}",
                                                   "dest": "data"}]})
        assert run_until(worker, client, user, job_id)["state"] == "COMPLETED"
        reasons.append(events(client, user, job_id)[2]["reason"])
    assert f"({len(DATA)} bytes) sent, 0 from the site's cache" in reasons[0]
    assert "0 bytes sent, 1 from the site's cache" in reasons[1]


def test_keep_mode_lists_outputs_and_streams_them_from_the_site(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    job_id = submit(client, user, {**sh("printf 'kept result' > result.txt"),
                                   "outputs": ["*.txt"], "outputs_mode": "keep"})
    assert run_until(Worker(runtime), client, user, job_id)["state"] == "COMPLETED"
    [item] = client.get(f"/api/v1/jobs/{job_id}/outputs", headers=user.headers).json()["items"]
    assert item["location"] == "site" and item["site"] == "local"
    assert item["sha256"] == hashlib.sha256(b"kept result").hexdigest()
    assert not BlobStore(runtime.settings.store_dir).has_blob(item["sha256"])
    r = client.get(f"/api/v1/jobs/{job_id}/outputs/result.txt",
                   headers={**user.headers, "Range": "bytes=5-"})
    assert r.status_code == 206 and r.content == b"result"


def test_failed_run_still_collects_outputs(client: TestClient, runtime: Runtime,
                                           make_user: MakeUser) -> None:
    user = make_user()
    job_id = submit(client, user, {**sh("echo why > debug.txt; exit 3"),
                                   "outputs": ["debug.txt"]})
    job = run_until(Worker(runtime), client, user, job_id)
    assert job["state"] == "FAILED" and job["exit_code"] == 3
    assert job["reason"] == "NonZeroExitCode; collected 1 output(s), 4 bytes"
    [item] = client.get(f"/api/v1/jobs/{job_id}/outputs", headers=user.headers).json()["items"]
    assert item["path"] == "debug.txt"


def test_symlinks_out_of_the_job_directory_are_refused_at_stage_out(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    worker = Worker(runtime)
    neighbour = submit(client, user, sh("echo private > secret.txt"))
    assert run_until(worker, client, user, neighbour)["state"] == "COMPLETED"
    other_dir = workdir(runtime, neighbour)
    job_id = submit(client, user, {
        **sh(f"mkdir out && echo fine > out/ok.txt && ln -s /etc/passwd out/passwd && "
             f"ln -s '{other_dir}' out/neighbour && ln -s '{other_dir}/secret.txt' "
             "out/secret.txt && ln -s ok.txt out/alias.txt && ln -s . out/here"),
        "outputs": ["out/*", "out/neighbour/*"]})
    job = run_until(worker, client, user, job_id)
    assert job["state"] == "COMPLETED", job
    assert "refused 4 symlink(s)" in job["reason"]
    assert "out/passwd -> /etc/passwd," in job["reason"]
    assert "out/here -> " in job["reason"]  # inside, but a directory
    listed = client.get(f"/api/v1/jobs/{job_id}/outputs", headers=user.headers).json()["items"]
    assert [f["path"] for f in listed] == ["out/alias.txt", "out/ok.txt"]
    assert {f["sha256"] for f in listed} == {hashlib.sha256(b"fine\n").hexdigest()}
    store = BlobStore(runtime.settings.store_dir)
    for secret in (Path("/etc/passwd").read_bytes(), b"private\n"):
        assert not store.has_blob(hashlib.sha256(secret).hexdigest())
    assert client.get(f"/api/v1/jobs/{job_id}/outputs/out/passwd",
                      headers=user.headers).status_code == 404


def test_output_limits_fail_the_job(client: TestClient, runtime: Runtime,
                                    make_user: MakeUser) -> None:
    user = make_user()
    runtime.settings.job_output_max_files = 2
    job_id = submit(client, user, {**sh("touch a b c"), "outputs": ["*"]})
    job = run_until(Worker(runtime), client, user, job_id)
    assert job["state"] == "FAILED"
    assert job["reason"] == (
        "STAGE_OUT_FAILED: 5 files match the output globs, over the per-job limit of 2 "
        "(job_output_max_files) by 3")


def test_inputs_land_with_private_modes(client: TestClient, runtime: Runtime,
                                        make_user: MakeUser) -> None:
    user = make_user()
    upload_id = upload(client, user, b"x" * 10)
    job_id = submit(client, user, {**sh("true"), "inputs": [
        {"source": f"upload:{upload_id}", "dest": "deep/er/x.bin"}]})
    assert run_until(Worker(runtime), client, user, job_id)["state"] == "COMPLETED"
    base = workdir(runtime, job_id)
    for path in (base / "deep", base / "deep" / "er"):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
    assert stat.S_IMODE(os.stat(base / "deep" / "er" / "x.bin").st_mode) == 0o600
