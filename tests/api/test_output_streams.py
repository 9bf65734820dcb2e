"""`follow=true` output streams against a real `gridgate serve` (uvicorn, as deployed).

Fifty open follows must leave the API answering, a user's streams are capped (429 with
Retry-After), and a client that goes away gives its slot back at once.
"""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx
import pytest

from gateway.api.http.stream_slots import SlotRefused, StreamSlots
from gateway.settings import Settings
from tests.conftest import MakeUser
from tests.worker.gateway_process import GatewayProcess, free_port

FOLLOWS = 50


def open_follow(port: int, token: str, job_id: str) -> tuple[int, socket.socket]:
    """A follow request on its own connection, read up to the end of the headers."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(f"GET /api/v1/jobs/{job_id}/logs/stdout?follow=true HTTP/1.1\r\n"
                 f"Host: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        block = sock.recv(4096)
        assert block, f"connection closed before the headers: {head!r}"
        head += block
    return int(head.split(b" ", 2)[1]), sock


def close_all(socks: list[socket.socket]) -> None:
    for sock in socks:
        sock.close()
    socks.clear()


@pytest.mark.parametrize("database_kind", ["sqlite"], indirect=True)
def test_fifty_follows_leave_the_api_answering_and_free_their_slots(
    settings: Settings, make_user: MakeUser, tmp_path: Path
) -> None:
    user = make_user()
    port = free_port()
    gateway = GatewayProcess({
        "GRIDGATE_DATA_DIR": str(settings.data_dir),
        "GRIDGATE_DATABASE_URL": settings.resolved_database_url,
        "GRIDGATE_PUBLIC_URL": settings.public_url, "GRIDGATE_PORT": str(port),
        # No worker: the job stays ACCEPTED, so every follow stays open.
        "GRIDGATE_RUN_WORKER": "false",
        "GRIDGATE_OUTPUT_MAX_STREAMS_PER_USER": str(FOLLOWS),
    }, tmp_path / "gateway.log", args=("--log-level", "warning"))
    gateway.start()
    follows: list[socket.socket] = []
    try:
        # A generous timeout: the old server did not answer late, it waited for a stream
        # to end (none does here).
        with httpx.Client(base_url=gateway.url, headers=user.headers, timeout=60) as client:
            job = client.post("/api/v1/jobs", json={"name": "quiet", "executable": "/bin/true"})
            job_id = job.json()["id"]
            for _ in range(FOLLOWS):
                status, sock = open_follow(port, user.token, job_id)
                follows.append(sock)
                assert status == 200
            # With every stream open, short requests still answer (the old server held a
            # thread per stream and timed out here).
            for _ in range(5):
                assert client.get("/api/v1/health").status_code == 200
                assert client.get(f"/api/v1/jobs/{job_id}").json()["state"] == "ACCEPTED"
            refused = client.get(f"/api/v1/jobs/{job_id}/logs/stdout",
                                 params={"follow": True})
            assert refused.status_code == 429
            assert refused.headers["content-type"] == "application/problem+json"
            assert int(refused.headers["retry-after"]) > 0
            assert f"{FOLLOWS} streams open" in refused.json()["detail"]
            close_all(follows)
            # Every slot comes back once its client is gone: the same number opens again
            # (a follow still running on the server would answer 429).
            deadline = time.monotonic() + 120
            while len(follows) < FOLLOWS and time.monotonic() < deadline:
                status, sock = open_follow(port, user.token, job_id)
                if status == 200:
                    follows.append(sock)
                else:
                    sock.close()
                    time.sleep(0.2)
            assert len(follows) == FOLLOWS
            assert client.get("/api/v1/health").status_code == 200
    finally:
        close_all(follows)
        gateway.stop()


def test_user_slots_are_shared_by_processes_and_freed_on_release(tmp_path: Path) -> None:
    # Two StreamSlots on one directory stand for two server processes of one host.
    first, second = (StreamSlots(tmp_path, per_user=2, per_process=2) for _ in range(2))
    held = [first.acquire("alice"), second.acquire("alice")]
    with pytest.raises(SlotRefused) as refused:
        first.acquire("alice")
    assert refused.value.scope == "user"
    held.append(second.acquire("bob"))
    held.append(first.acquire("bob"))
    with pytest.raises(SlotRefused) as refused:
        first.acquire("carol")
    assert refused.value.scope == "process"
    held[0].release()
    held[0].release()  # idempotent: frees one slot, once
    assert first.in_use == 1
    held.append(first.acquire("alice"))
    for slot in held:
        slot.release()
    assert first.in_use == second.in_use == 0
