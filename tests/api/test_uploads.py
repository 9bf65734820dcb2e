"""The uploads API (chunked, resumable, verified) on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import itertools
import os
import stat
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from gateway.api.app import create_app
from gateway.db.base import utcnow
from gateway.db.engine import transaction
from gateway.db.models import Upload
from gateway.runtime import Runtime
from gateway.services.data.uploads import expire_uploads
from gateway.settings import Settings
from gateway.store import BlobStore, hashing
from gateway.worker.loop import Worker
from tests.conftest import MakeUser, TestUser

MiB = 1024 * 1024


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # Small limits so the tests can reach them; max_body_bytes stays at its 1 MiB default
    # so chunks above it prove that chunk PUTs are exempt.
    return settings.model_copy(update={"store_quota_bytes": 12 * MiB,
                                       "upload_max_bytes": 10 * MiB,
                                       "upload_chunk_max_bytes": 4 * MiB})


def payload(size: int, seed: int = 1) -> bytes:
    return hashlib.shake_256(str(seed).encode()).digest(size)


def create(client: TestClient, user: TestUser, data: bytes, name: str = "input.dat",
           sha: bool = True) -> dict[str, object]:
    body: dict[str, object] = {"name": name, "size": len(data)}
    if sha:
        body["sha256"] = hashlib.sha256(data).hexdigest()
    r = client.post("/api/v1/uploads", json=body, headers=user.headers)
    assert r.status_code == 201, r.text
    created: dict[str, object] = r.json()
    assert r.headers["location"] == f"/api/v1/uploads/{created['id']}"
    assert created["offset"] == 0 and created["state"] == "open" and created["expires_at"]
    return created


def put(client: TestClient, user: TestUser, upload_id: object, data: bytes, start: int,
        end: int) -> httpx.Response:
    response: httpx.Response = client.put(
        f"/api/v1/uploads/{upload_id}", content=data[start:end],
        headers={**user.headers, "Content-Range": f"bytes {start}-{end - 1}/{len(data)}"})
    return response


def test_uneven_chunks_complete_into_a_private_blob(client: TestClient, make_user: MakeUser,
                                                    settings: Settings) -> None:
    user = make_user()
    data = payload(5 * MiB + 12345)
    up = create(client, user, data)
    bounds = [0, 1, 3 * MiB + 7, 3 * MiB + 8, 4 * MiB, len(data)]
    for start, end in itertools.pairwise(bounds):
        r = put(client, user, up["id"], data, start, end)
        assert r.status_code == 200, r.text
        assert r.json()["offset"] == end
        assert r.headers["upload-offset"] == str(end)
    head = client.head(f"/api/v1/uploads/{up['id']}", headers=user.headers)
    assert head.status_code == 200 and head.headers["upload-offset"] == str(len(data))
    sha = hashlib.sha256(data).hexdigest()
    done = client.post(f"/api/v1/uploads/{up['id']}/complete", json={"sha256": sha},
                       headers=user.headers)
    assert done.status_code == 200, done.text
    assert done.json()["state"] == "complete" and done.json()["sha256"] == sha
    store = BlobStore(settings.store_dir)
    blob = store.blob_path(sha)
    assert blob.read_bytes() == data
    assert not store.part_path(str(up["id"])).exists()
    assert stat.S_IMODE(blob.stat().st_mode) == 0o600
    for directory in (blob.parent, store.blobs_dir, store.uploads_dir, store.root):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    with store.open_blob(sha) as f:
        assert f.read(10) == data[:10]
    assert store.blob_size(sha) == len(data)
    again = client.post(f"/api/v1/uploads/{up['id']}/complete", json={"sha256": sha},
                        headers=user.headers)
    assert again.status_code == 200  # finalizing twice is harmless
    listed = client.get("/api/v1/uploads", headers=user.headers).json()["items"]
    assert [(u["id"], u["state"], u["offset"]) for u in listed] == [
        (up["id"], "complete", len(data))]


def test_resume_after_a_dropped_client(runtime: Runtime, make_user: MakeUser) -> None:
    """The first client stops half-way; a new one asks the offset and sends the rest."""

    user = make_user()
    data = payload(6 * MiB, seed=2)
    chunk = 2 * MiB
    sent = 0
    with TestClient(create_app(runtime=runtime)) as first:
        up = create(first, user, data, sha=False)
        for start in (0, chunk):
            assert put(first, user, up["id"], data, start, start + chunk).status_code == 200
            sent += chunk
    # "Restart": the new process has no running digest, so finalize reads the disk.
    hashing.forget(runtime.settings.store_dir, str(up["id"]))
    with TestClient(create_app(runtime=runtime)) as second:
        offset = int(second.head(f"/api/v1/uploads/{up['id']}",
                                 headers=user.headers).headers["upload-offset"])
        assert offset == 2 * chunk
        while offset < len(data):
            end = min(offset + chunk, len(data))
            r = put(second, user, up["id"], data, offset, end)
            assert r.status_code == 200, r.text
            sent += end - offset
            offset = end
        done = second.post(f"/api/v1/uploads/{up['id']}/complete",
                           json={"sha256": hashlib.sha256(data).hexdigest()},
                           headers=user.headers)
        assert done.status_code == 200, done.text
    assert sent < 1.3 * len(data)
    blob = BlobStore(runtime.settings.store_dir).blob_path(hashlib.sha256(data).hexdigest())
    assert blob.read_bytes() == data


def test_wrong_offset_is_409_with_the_offset(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    data = payload(3 * MiB, seed=3)
    up = create(client, user, data)
    assert put(client, user, up["id"], data, 0, MiB).status_code == 200
    for start, end in [(2 * MiB, 3 * MiB), (0, MiB), (MiB - 10, 2 * MiB)]:
        r = put(client, user, up["id"], data, start, end)
        assert r.status_code == 409, (start, r.text)
        assert r.headers["upload-offset"] == str(MiB)
        assert r.headers["content-type"] == "application/problem+json"
        assert r.json()["offset"] == MiB and str(MiB) in r.json()["detail"]
    early = client.post(f"/api/v1/uploads/{up['id']}/complete", json={}, headers=user.headers)
    assert early.status_code == 409 and early.json()["offset"] == MiB
    assert early.headers["upload-offset"] == str(MiB)
    # The refused chunks left nothing behind: the rest completes the file.
    assert put(client, user, up["id"], data, MiB, 3 * MiB).status_code == 200
    assert client.post(f"/api/v1/uploads/{up['id']}/complete", json={},
                       headers=user.headers).status_code == 200


def test_body_must_match_the_range(client: TestClient, make_user: MakeUser,
                                   settings: Settings) -> None:
    user = make_user()
    data = payload(MiB, seed=4)
    up = create(client, user, data)
    url = f"/api/v1/uploads/{up['id']}"
    short = client.put(url, content=data[:100],
                       headers={**user.headers, "Content-Range": f"bytes 0-199/{len(data)}"})
    assert short.status_code == 422 and "Content" in short.json()["detail"]
    bad = client.put(url, content=data[:10],
                     headers={**user.headers, "Content-Range": "bytes=0-9"})
    assert bad.status_code == 422 and "Content-Range" in bad.json()["detail"]
    wrong_total = client.put(url, content=data[:10],
                             headers={**user.headers, "Content-Range": "bytes 0-9/99"})
    assert wrong_total.status_code == 422 and str(len(data)) in wrong_total.json()["detail"]
    big = payload(8 * MiB)
    up2 = create(client, user, big)
    huge = put(client, user, up2["id"], big, 0, 5 * MiB)
    assert huge.status_code == 413 and "4194304" in huge.json()["detail"]
    assert client.get(url, headers=user.headers).json()["offset"] == 0
    assert BlobStore(settings.store_dir).part_path(str(up["id"])).stat().st_size == 0


def test_sha_mismatch_is_422_and_resets(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    data = payload(2 * MiB, seed=5)
    up = create(client, user, data)
    corrupt = bytearray(data)
    corrupt[12345] ^= 0xFF
    assert put(client, user, up["id"], bytes(corrupt), 0, len(data)).status_code == 200
    expected = hashlib.sha256(data).hexdigest()
    actual = hashlib.sha256(corrupt).hexdigest()
    r = client.post(f"/api/v1/uploads/{up['id']}/complete", json={"sha256": expected},
                    headers=user.headers)
    assert r.status_code == 422, r.text
    assert expected in r.json()["detail"] and actual in r.json()["detail"]
    assert "reset" in r.json()["detail"]
    shown = client.get(f"/api/v1/uploads/{up['id']}", headers=user.headers).json()
    assert shown["state"] == "open" and shown["offset"] == 0
    other = "0" * 64
    r = client.post(f"/api/v1/uploads/{up['id']}/complete", json={"sha256": other},
                    headers=user.headers)
    assert r.status_code == 422 and expected in r.json()["detail"]
    assert put(client, user, up["id"], data, 0, len(data)).status_code == 200
    assert client.post(f"/api/v1/uploads/{up['id']}/complete", json={},
                       headers=user.headers).json()["state"] == "complete"


def test_quota_and_file_limit_are_413_with_numbers(client: TestClient, make_user: MakeUser
                                                   ) -> None:
    user = make_user()
    too_big = client.post("/api/v1/uploads", json={"name": "x", "size": 11 * MiB},
                          headers=user.headers)
    assert too_big.status_code == 413
    body = too_big.json()
    assert body["limit"] == "upload_max_bytes" and body["excess_bytes"] == MiB
    assert "10.0 MiB" in body["detail"] and "1.0 MiB" in body["detail"]
    first = client.post("/api/v1/uploads", json={"name": "a", "size": 8 * MiB},
                        headers=user.headers)
    assert first.status_code == 201
    over = client.post("/api/v1/uploads", json={"name": "b", "size": 5 * MiB},
                       headers=user.headers)
    assert over.status_code == 413
    body = over.json()
    assert body["limit"] == "store_quota_bytes" and body["excess_bytes"] == MiB
    assert body["used_bytes"] == 8 * MiB
    assert "quota of 12.0 MiB" in body["detail"] and "by 1.0 MiB (1048576 bytes)" in (
        body["detail"])
    # Another user has their own quota; deleting frees this one's.
    assert client.post("/api/v1/uploads", json={"name": "b", "size": 5 * MiB},
                       headers=make_user().headers).status_code == 201
    assert client.delete(f"/api/v1/uploads/{first.json()['id']}",
                         headers=user.headers).status_code == 204
    assert client.post("/api/v1/uploads", json={"name": "b", "size": 5 * MiB},
                       headers=user.headers).status_code == 201


def test_other_users_uploads_are_404_on_every_verb(client: TestClient, make_user: MakeUser
                                                   ) -> None:
    alice, bob = make_user(), make_user()
    data = payload(1000)
    up = create(client, alice, data)
    url = f"/api/v1/uploads/{up['id']}"
    calls = [
        client.get(url, headers=bob.headers),
        client.head(url, headers=bob.headers),
        client.put(url, content=data, headers={**bob.headers,
                                               "Content-Range": "bytes 0-999/1000"}),
        client.post(f"{url}/complete", json={}, headers=bob.headers),
        client.delete(url, headers=bob.headers),
        client.get("/api/v1/uploads/../uploads/nope", headers=bob.headers),
    ]
    for r in calls:
        assert r.status_code == 404, (r.request.method, r.text)
    assert client.get("/api/v1/uploads", headers=bob.headers).json()["items"] == []
    assert client.get(url, headers=alice.headers).json()["offset"] == 0
    reader = make_user(scope="jobs:read")
    assert client.post("/api/v1/uploads", json={"name": "x", "size": 1},
                       headers=reader.headers).status_code == 403


def test_same_content_is_stored_once(client: TestClient, make_user: MakeUser,
                                     settings: Settings) -> None:
    alice, bob = make_user(), make_user()
    data = payload(300_000, seed=6)
    sha = hashlib.sha256(data).hexdigest()
    ids = []
    for user in (alice, bob):
        up = create(client, user, data)
        assert put(client, user, up["id"], data, 0, len(data)).status_code == 200
        assert client.post(f"/api/v1/uploads/{up['id']}/complete", json={},
                           headers=user.headers).status_code == 200
        ids.append(up["id"])
    store = BlobStore(settings.store_dir)
    assert [p.name for p in store.blobs_dir.rglob("*") if p.is_file()] == [sha]
    client.delete(f"/api/v1/uploads/{ids[0]}", headers=alice.headers)
    assert store.has_blob(sha), "bob's upload still refers to it"
    client.delete(f"/api/v1/uploads/{ids[1]}", headers=bob.headers)
    assert not store.has_blob(sha)


def test_expiry_removes_unfinished_uploads(client: TestClient, make_user: MakeUser,
                                           runtime: Runtime) -> None:
    user = make_user()
    data = payload(MiB, seed=7)
    store = BlobStore(runtime.settings.store_dir)
    stale = create(client, user, data)
    assert put(client, user, stale["id"], data, 0, MiB // 2).status_code == 200
    done = create(client, user, data)
    assert put(client, user, done["id"], data, 0, MiB).status_code == 200
    assert client.post(f"/api/v1/uploads/{done['id']}/complete", json={},
                       headers=user.headers).status_code == 200
    part = store.part_path(str(stale["id"]))
    assert part.stat().st_size == MiB // 2
    ttl = runtime.settings.upload_ttl_seconds
    with transaction(runtime.sessions) as session:
        assert expire_uploads(session, store, utcnow()) == 0
    with transaction(runtime.sessions) as session:
        assert expire_uploads(session, store, utcnow() + timedelta(seconds=ttl + 60)) == 1
    assert not part.exists()
    assert store.has_blob(hashlib.sha256(data).hexdigest())
    shown = client.get(f"/api/v1/uploads/{stale['id']}", headers=user.headers).json()
    assert shown["state"] == "expired"
    r = put(client, user, stale["id"], data, MiB // 2, MiB)
    assert r.status_code == 409 and "expired" in r.json()["detail"]
    assert client.post(f"/api/v1/uploads/{stale['id']}/complete", json={},
                       headers=user.headers).status_code == 409
    # Expired uploads no longer count against the quota.
    with transaction(runtime.sessions) as session:
        from gateway.services.data.uploads import store_usage
        assert store_usage(session, user.principal.user_id) == MiB


def test_zero_byte_file(client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    up = create(client, user, b"")
    r = client.post(f"/api/v1/uploads/{up['id']}/complete", json={}, headers=user.headers)
    assert r.status_code == 200 and r.json()["sha256"] == hashlib.sha256(b"").hexdigest()


def test_part_files_are_private(client: TestClient, make_user: MakeUser,
                                settings: Settings) -> None:
    user = make_user()
    up = create(client, user, b"abc")
    part = BlobStore(settings.store_dir).part_path(str(up["id"]))
    assert stat.S_IMODE(part.stat().st_mode) == 0o600
    assert os.path.dirname(part) == str(Path(settings.store_dir) / "uploads")


def test_the_worker_expires_idle_uploads(client: TestClient, make_user: MakeUser,
                                         runtime: Runtime) -> None:
    user = make_user()
    data = payload(MiB, seed=8)
    stale = create(client, user, data)
    assert put(client, user, stale["id"], data, 0, MiB // 2).status_code == 200
    part = BlobStore(runtime.settings.store_dir).part_path(str(stale["id"]))
    assert part.exists()
    worker = Worker(runtime)
    worker.run_once()  # not idle long enough yet
    assert client.get(f"/api/v1/uploads/{stale['id']}",
                      headers=user.headers).json()["state"] == "open"
    with transaction(runtime.sessions) as session:  # as if idle past its time
        session.execute(update(Upload).where(Upload.id == stale["id"])
                        .values(expires_at=utcnow() - timedelta(seconds=1)))
    Worker(runtime).run_once()  # a fresh worker sweeps on its first cycle
    assert client.get(f"/api/v1/uploads/{stale['id']}",
                      headers=user.headers).json()["state"] == "expired"
    assert not part.exists()


def test_a_delete_that_fails_to_commit_loses_no_data(runtime: Runtime, make_user: MakeUser,
                                                     settings: Settings,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Store files go only after the deletion is committed: if the commit fails, the
    upload is still there, complete, with its bytes."""
    user = make_user()
    data = payload(200_000, seed=7)
    with TestClient(create_app(runtime=runtime), raise_server_exceptions=False) as client:
        up = create(client, user, data)
        assert put(client, user, up["id"], data, 0, len(data)).status_code == 200
        assert client.post(f"/api/v1/uploads/{up['id']}/complete", json={},
                           headers=user.headers).status_code == 200

        def failing_commit(self: Session) -> None:
            raise OperationalError("COMMIT", {}, Exception("the database went away"))

        with monkeypatch.context() as patch:
            patch.setattr(Session, "commit", failing_commit)
            r = client.delete(f"/api/v1/uploads/{up['id']}", headers=user.headers)
        assert r.status_code >= 500
        got = client.get(f"/api/v1/uploads/{up['id']}", headers=user.headers)
        assert got.status_code == 200 and got.json()["state"] == "complete"
        assert BlobStore(settings.store_dir).has_blob(hashlib.sha256(data).hexdigest())
        assert client.delete(f"/api/v1/uploads/{up['id']}",
                             headers=user.headers).status_code == 204
        assert not BlobStore(settings.store_dir).has_blob(hashlib.sha256(data).hexdigest())
