"""Stage-in that cannot succeed ends the job FAILED with STAGE_IN_FAILED and the cause;
a worker that dies between stage-in and submit is replaced, and the job is staged again
(resuming the partial transfer) and submitted exactly once."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from adapters.transfer.site_fs import partial_name
from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Attempt, Event
from gateway.runtime import Runtime
from gateway.schemas.events import ATTEMPT_STATE_TYPE, JOB_STAGING_TYPE
from gateway.worker.loop import Worker
from gateway.worker.route import route_jobs
from gateway.worker.staging.stage_in import stage_in_claim
from gateway.worker.submission.claim import claim_accepted
from tests.conftest import MakeUser
from tests.staging.helpers import events, run_until, sh, submit, upload

DATA = hashlib.shake_256(b"crash").digest(2 * 1024 * 1024 + 5)


def failed_with(client: TestClient, runtime: Runtime, user: object, job_id: str) -> str:
    job = run_until(Worker(runtime), client, user, job_id)  # type: ignore[arg-type]
    assert job["state"] == "FAILED", job
    reason: str = job["reason"]
    assert reason.startswith("STAGE_IN_FAILED: "), reason
    assert job["attempts"][0]["native_id"] is None  # never submitted
    return reason


def test_site_sources_outside_own_job_directories_are_refused(
        client: TestClient, runtime: Runtime, make_user: MakeUser, tmp_path: Path) -> None:
    owner, other = make_user(), make_user()
    theirs = submit(client, owner, sh("echo mine > mine.txt"))
    assert run_until(Worker(runtime), client, owner, theirs)["state"] == "COMPLETED"
    their_file = runtime.settings.jobs_dir / f"gw-{theirs}" / "mine.txt"
    outside = tmp_path / "outside.txt"
    outside.write_text("gateway host file")
    link = tmp_path / "link-to-theirs"
    link.symlink_to(their_file)
    cases = {
        "/etc/passwd": "not in one of your own job directories",
        str(outside): "not in one of your own job directories",
        str(their_file): "not in one of your own job directories",
        str(link): "not in one of your own job directories",
        str(runtime.settings.resolved_signing_key_path): "not in one of your own",
        str(runtime.settings.data_dir / "no-such-file"): "not in one of your own",
        "/no/such/file": "not in one of your own job directories",
    }
    for path, cause in cases.items():
        job_id = submit(client, other, {**sh("true"), "inputs": [
            {"source": f"site://local{path}", "dest": "x"}]})
        reason = failed_with(client, runtime, other, job_id)
        assert cause in reason, (path, reason)
    job_id = submit(client, owner, {**sh("true"), "inputs": [
        {"source": f"site://local{their_file.parent}/missing.txt", "dest": "x"}]})
    assert "does not exist" in failed_with(client, runtime, owner, job_id)


def test_a_deleted_upload_fails_stage_in(client: TestClient, runtime: Runtime,
                                         make_user: MakeUser) -> None:
    user = make_user()
    upload_id = upload(client, user, b"soon gone")
    job_id = submit(client, user, {**sh("true"), "inputs": [
        {"source": f"upload:{upload_id}", "dest": "x"}]})
    assert client.delete(f"/api/v1/uploads/{upload_id}",
                         headers=user.headers).status_code == 204
    reason = failed_with(client, runtime, user, job_id)
    assert f"upload {upload_id} is no longer a complete upload" in reason
    states = [e["to_state"] for e in events(client, user, job_id)]
    assert states == ["ACCEPTED", "STAGING_IN", "FAILED"]


def test_https_input_to_loopback_fails_stage_in(client: TestClient, runtime: Runtime,
                                                make_user: MakeUser) -> None:
    user = make_user()
    for url in ("https://127.0.0.1/x", "https://localhost:8642/x", "https://[::1]/x",
                "https://10.1.2.3/data", "https://169.254.169.254/latest/meta-data"):
        job_id = submit(client, user, {**sh("true"), "inputs": [{"source": url,
                                                                  "dest": "x"}]})
        reason = failed_with(client, runtime, user, job_id)
        assert "not a public address" in reason, reason


def test_input_bytes_over_the_limit_at_staging(client: TestClient, runtime: Runtime,
                                               make_user: MakeUser) -> None:
    user = make_user()
    seed = submit(client, user, sh("head -c 5000 /dev/zero > big"))
    assert run_until(Worker(runtime), client, user, seed)["state"] == "COMPLETED"
    runtime.settings.job_input_max_bytes = 4000
    path = runtime.settings.jobs_dir / f"gw-{seed}" / "big"
    job_id = submit(client, user, {**sh("true"), "inputs": [
        {"source": f"site://local{path}", "dest": "big"}]})
    reason = failed_with(client, runtime, user, job_id)
    assert "(job_input_max_bytes) by 1000 bytes" in reason, reason


def test_an_input_that_arrives_damaged_ends_in_a_failed_staging_event(
        client: TestClient, runtime: Runtime, make_user: MakeUser) -> None:
    user = make_user()
    data = hashlib.shake_256(b"damaged").digest(1024 * 1024 + 3)
    job_id = submit(client, user, {**sh("true"), "inputs": [
        {"source": f"upload:{upload(client, user, data)}", "dest": "in/data"}]})
    # The store's copy rots after the upload: what arrives never matches its digest.
    for path in (Path(runtime.settings.store_dir) / "blobs").rglob(
            hashlib.sha256(data).hexdigest()):
        path.chmod(0o600)
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    reason = failed_with(client, runtime, user, job_id)
    with runtime.sessions() as session:
        rows = session.execute(select(Event.type, Event.data, Event.to_state)
                               .where(Event.job_id == job_id).order_by(Event.id)).all()
    staging = [row.data for row in rows if row.type == JOB_STAGING_TYPE]
    assert not any(d["done"] for d in staging)
    # The failed input's event, with the job's FAILED change (just before it; the
    # attempt's own FAILED comes between).
    assert staging[-1] == {"direction": "in", "path": "in/data", "bytes_done": len(data),
                           "bytes_total": len(data), "done": False,
                           "error": reason.removeprefix("STAGE_IN_FAILED: ")}
    assert [row.type for row in rows[-3:-1]] == [JOB_STAGING_TYPE, ATTEMPT_STATE_TYPE]
    assert rows[-2].data["to"] == rows[-1].to_state == "FAILED"


def test_worker_dies_between_stage_in_and_submit(client: TestClient, runtime: Runtime,
                                                 make_user: MakeUser) -> None:
    user = make_user()
    upload_id = upload(client, user, DATA)
    job_id = submit(client, user, {**sh("cat data >> ran.txt; echo once >> count.txt"),
                                   "inputs": [{"source": f"upload:{upload_id}",
                                               "dest": "data"}],
                                   "outputs": ["count.txt"]})
    site = runtime.sites.get("local")
    first = Worker(runtime, "first")
    assert route_jobs(first.ctx) is True  # issue 12: an auto job is routed at dispatch
    [claim] = claim_accepted(first.ctx, site)
    # The first worker stages, then "dies" before it submits ...
    assert stage_in_claim(first.ctx, site, site.adapter, claim) is not None
    # ... and, to prove resumption, as if it had died in the middle of the transfer: the
    # cache entry is replaced by half a partial file.
    sha = hashlib.sha256(DATA).hexdigest()
    entry = Path(site.cache_dir(None)) / sha
    entry.unlink()
    Path(partial_name(str(entry))).write_bytes(DATA[:len(DATA) // 2])
    with transaction(runtime.sessions) as session:
        session.execute(update(Attempt).where(Attempt.id == claim.attempt_id)
                        .values(lease_until=utcnow() - timedelta(seconds=1)))
    second = Worker(runtime, "second")
    job = run_until(second, client, user, job_id, {"QUEUED", "RUNNING", "STAGING_OUT",
                                                    "COMPLETED", "FAILED"})
    # The first worker comes back: it no longer holds the lease and must not submit.
    assert stage_in_claim(first.ctx, site, site.adapter, claim) is None
    job = run_until(second, client, user, job_id)
    assert job["state"] == "COMPLETED", job
    queued = [e for e in events(client, user, job_id) if e["to_state"] == "QUEUED"]
    assert len(queued) == 1 and queued[0]["actor"] == "worker second"
    rest = len(DATA) - len(DATA) // 2
    assert f"({rest} bytes) sent, 0 from the site's cache" in queued[0]["reason"]
    r = client.get(f"/api/v1/jobs/{job_id}/outputs/count.txt", headers=user.headers)
    assert r.text == "once\n"
    workdir = runtime.settings.jobs_dir / f"gw-{job_id}"
    assert (workdir / "ran.txt").read_bytes() == DATA
    with runtime.sessions() as session:
        assert session.scalar(select(func.count()).select_from(Attempt)
                              .where(Attempt.job_id == job_id)) == 1
        assert session.scalar(select(func.count()).select_from(Event).where(
            Event.job_id == job_id, Event.to_state == "COMPLETED")) == 1
