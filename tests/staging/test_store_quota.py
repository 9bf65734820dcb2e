"""Outputs fetched into the gateway store count against the owner's store quota, like
uploads: stage-out refuses to fetch past it (STAGE_OUT_FAILED, the outputs stay on the
site), and DELETE /jobs/{id}/outputs frees what a job's outputs hold."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from gateway.store import BlobStore
from gateway.worker.loop import Worker
from tests.conftest import MakeUser
from tests.staging.helpers import run_until, sh, submit

if TYPE_CHECKING:  # imported here only: pytest would try to collect the class
    from tests.conftest import TestUser


def fetch_job(client: TestClient, user: TestUser, size: int) -> str:
    return submit(client, user, {**sh(f"head -c {size} /dev/zero > out.bin"),
                                 "outputs": ["out.bin"], "outputs_mode": "fetch"})


def test_fetched_outputs_count_and_deleting_them_frees_the_quota(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user, other = make_user(), make_user()
    runtime.settings.store_quota_bytes = 10_000
    job_id = fetch_job(client, user, 6000)
    assert run_until(Worker(runtime), client, user, job_id)["state"] == "COMPLETED"
    # 6000 bytes held for the job's output: a 5000-byte upload no longer fits.
    r = client.post("/api/v1/uploads", json={"name": "x", "size": 5000}, headers=user.headers)
    assert r.status_code == 413, r.text
    assert r.json()["used_bytes"] == 6000 and r.json()["excess_bytes"] == 1000
    # Another user can neither see nor delete the job's files.
    assert client.delete(f"/api/v1/jobs/{job_id}/outputs",
                         headers=other.headers).status_code == 404
    assert client.delete(f"/api/v1/jobs/{job_id}/outputs",
                         headers=user.headers).status_code == 204
    sha = hashlib.sha256(bytes(6000)).hexdigest()
    assert not BlobStore(runtime.settings.store_dir).has_blob(sha)
    assert client.get(f"/api/v1/jobs/{job_id}/outputs", headers=user.headers).json() == {
        "items": [], "next_cursor": None}
    r = client.post("/api/v1/uploads", json={"name": "x", "size": 5000}, headers=user.headers)
    assert r.status_code == 201, r.text


def test_stage_out_past_the_quota_fails_and_leaves_the_outputs_on_the_site(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    runtime.settings.store_quota_bytes = 4000
    job_id = fetch_job(client, user, 5000)
    job = run_until(Worker(runtime), client, user, job_id)
    assert job["state"] == "FAILED", job
    reason = job["reason"]
    assert reason.startswith("STAGE_OUT_FAILED: "), reason
    assert "(store_quota_bytes) by 1000 bytes" in reason and "still on the site" in reason
    assert (runtime.settings.jobs_dir / f"gw-{job_id}" / "out.bin").stat().st_size == 5000
    assert not BlobStore(runtime.settings.store_dir).has_blob(
        hashlib.sha256(bytes(5000)).hexdigest())


def test_outputs_of_a_running_job_cannot_be_deleted(client: TestClient, runtime: Runtime,
                                                    make_user: MakeUser) -> None:
    user = make_user()
    job_id = fetch_job(client, user, 10)
    r = client.delete(f"/api/v1/jobs/{job_id}/outputs", headers=user.headers)
    assert r.status_code == 409 and "once it has ended" in r.json()["detail"]
