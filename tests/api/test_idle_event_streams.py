"""Idle event streams sleep until something happens (no per-second poll; see
benchmarks/stream_cost.py), yet a client that leaves gives its slot back and a stopping
server ends every stream cleanly. Against a real `gridgate serve`; the heartbeat is an
hour, so neither may wait for one."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.settings import Settings
from tests.conftest import MakeUser, TestUser
from tests.worker.gateway_process import GatewayProcess, free_port

pytestmark = pytest.mark.parametrize("database_kind", ["sqlite"], indirect=True)


@pytest.fixture
def gateway(settings: Settings, tmp_path: Path) -> Iterator[GatewayProcess]:
    process = GatewayProcess({
        "GRIDGATE_DATA_DIR": str(settings.data_dir),
        "GRIDGATE_DATABASE_URL": settings.resolved_database_url,
        "GRIDGATE_PUBLIC_URL": settings.public_url, "GRIDGATE_PORT": str(free_port()),
        "GRIDGATE_RUN_WORKER": "false", "GRIDGATE_EVENTS_HEARTBEAT_SECONDS": "3600",
        "GRIDGATE_OUTPUT_MAX_STREAMS_PER_USER": "1",
    }, tmp_path / "gateway.log", args=("--log-level", "info"))
    process.start()
    try:
        yield process
    finally:
        process.stop()


def open_stream(port: int, user: TestUser) -> tuple[int, socket.socket, bytes]:
    """An event stream on its own connection: its status, the socket, and what was read
    (up to the `retry:` line of a stream that opened, the whole answer of a refusal)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    sock.sendall(f"GET /api/v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 f"Authorization: Bearer {user.token}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    status = int(head.split(b" ", 2)[1])
    while status == 200 and b"retry:" not in head:
        head += sock.recv(4096)
    return status, sock, head


def test_a_client_that_leaves_an_idle_stream_gives_its_slot_back(
        gateway: GatewayProcess, make_user: MakeUser) -> None:
    user = make_user()
    status, first, _ = open_stream(gateway.port, user)
    assert status == 200
    status, refused, _ = open_stream(gateway.port, user)
    refused.close()
    assert status == 429  # the one slot is held
    first.close()
    deadline = time.monotonic() + 60
    while True:
        status, again, _ = open_stream(gateway.port, user)
        again.close()
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert status == 200


def test_a_stopping_server_ends_idle_streams_cleanly(
        gateway: GatewayProcess, make_user: MakeUser) -> None:
    status, sock, seen = open_stream(gateway.port, make_user())
    assert status == 200
    gateway.stop()
    while block := sock.recv(4096):
        seen += block
    sock.close()
    # The last chunk of a chunked body: the stream ended, it was not cut off when the
    # grace period ran out.
    assert seen.endswith(b"\r\n0\r\n\r\n"), seen[-200:]
    assert "CancelledError" not in gateway.log_path.read_text()
