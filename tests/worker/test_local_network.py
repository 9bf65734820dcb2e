"""A job on the local site reaches neither the gateway that runs it nor its PostgreSQL.

The real gateway (`gridgate serve`, on a loopback port, with the suite's PostgreSQL on
another) runs a job that tries both: GET /metrics, which the gateway answers to any
loopback client without a token, and a TCP connection to the database.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from gateway.settings import Settings
from tests.conftest import MakeUser
from tests.worker.gateway_process import GatewayProcess, free_port
from tests.worker.test_crash_recovery import env_for

PROBE = """
import socket, sys
for name, port in (("gateway", int(sys.argv[1])), ("postgresql", int(sys.argv[2]))):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
            conn.sendall(b"GET /metrics HTTP/1.0\\r\\nHost: 127.0.0.1\\r\\n\\r\\n")
            print(name, "answered", conn.recv(64).split(b"\\r\\n")[0].decode("ascii", "replace"))
    except OSError as exc:
        print(name, "unreachable:", exc.strerror or exc)
"""


def wait_final(client: httpx.Client, job_id: str, deadline: float = 120) -> dict[str, Any]:
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        job: dict[str, Any] = client.get(f"/api/v1/jobs/{job_id}").json()
        if job["state"] in ("COMPLETED", "FAILED", "CANCELLED"):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not end: {job}")


@pytest.mark.parametrize("database_kind", ["postgresql"], indirect=True)
def test_a_local_job_reaches_neither_the_gateway_nor_its_database(
    settings: Settings, make_user: MakeUser, tmp_path: Path
) -> None:
    db = make_url(settings.resolved_database_url)
    assert db.host == "127.0.0.1" and db.port is not None
    user = make_user()
    port = free_port()
    gateway = GatewayProcess(env_for(settings, GRIDGATE_PORT=str(port)), tmp_path / "gw.log")
    gateway.start()
    try:
        with httpx.Client(base_url=gateway.url, headers=user.headers, timeout=30) as client:
            # The gateway does answer a loopback client, and PostgreSQL is up.
            assert client.get("/metrics").status_code == 200
            spec = {"name": "reach-host", "site": "local", "executable": "python3",
                    "args": ["-c", PROBE, str(port), str(db.port)]}
            posted = client.post("/api/v1/jobs", json=spec)
            assert posted.status_code == 202, posted.text
            job = wait_final(client, posted.json()["id"])
            out = client.get(f"/api/v1/jobs/{job['id']}/logs/stdout").text
    finally:
        gateway.stop()
    assert job["state"] == "COMPLETED", job
    assert out.splitlines() == ["gateway unreachable: Connection refused",
                                "postgresql unreachable: Connection refused"], out
