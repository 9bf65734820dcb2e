"""Shared steps of the staging tests: uploads through the API, jobs driven by a worker."""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import ipaddress
import threading
import time
from collections.abc import Iterator
from typing import Any

from fastapi.testclient import TestClient

from gateway.services.data.https_fetch import is_public_address
from gateway.worker.loop import Worker
from tests.conftest import TestUser

FINAL = {"COMPLETED", "FAILED", "CANCELLED"}
# A loopback address of its own for the tests' HTTP servers, which only_test_host allows.
TEST_HOST = "127.0.0.2"


@contextlib.contextmanager
def http_server(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[int]:
    """A threaded HTTP server on TEST_HOST serving `handler`; its port."""
    httpd = http.server.ThreadingHTTPServer((TEST_HOST, 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1]
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def only_test_host(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    """The gateway's address checker, except that the test servers' address is allowed."""
    return str(ip) == TEST_HOST or is_public_address(ip)


def upload(client: TestClient, user: TestUser, data: bytes, *, complete: bool = True) -> str:
    """An upload of `data` through the API; its id."""
    sha = hashlib.sha256(data).hexdigest()
    r = client.post("/api/v1/uploads", json={"name": "in.dat", "size": len(data),
                                             "sha256": sha}, headers=user.headers)
    assert r.status_code == 201, r.text
    upload_id: str = r.json()["id"]
    if not complete:
        return upload_id
    if data:
        r = client.put(f"/api/v1/uploads/{upload_id}", content=data, headers={
            **user.headers, "Content-Range": f"bytes 0-{len(data) - 1}/{len(data)}"})
        assert r.status_code == 200, r.text
    r = client.post(f"/api/v1/uploads/{upload_id}/complete", json={"sha256": sha},
                    headers=user.headers)
    assert r.status_code == 200, r.text
    return upload_id


def submit(client: TestClient, user: TestUser, spec: dict[str, Any]) -> str:
    r = client.post("/api/v1/jobs", json={"name": "staging", **spec}, headers=user.headers)
    assert r.status_code == 202, r.text
    job_id: str = r.json()["id"]
    return job_id


def run_until(worker: Worker, client: TestClient, user: TestUser, job_id: str,
              states: set[str] = FINAL, deadline: float = 90) -> dict[str, Any]:
    end = time.monotonic() + deadline
    job: dict[str, Any] = {}
    while time.monotonic() < end:
        worker.run_once()
        job = client.get(f"/api/v1/jobs/{job_id}", headers=user.headers).json()
        if job["state"] in states:
            return job
        time.sleep(0.1)
    raise AssertionError(f"job {job_id} did not reach {states}: {job}")


def events(client: TestClient, user: TestUser, job_id: str) -> list[dict[str, Any]]:
    """The job's state changes (a routing decision is an event that changes no state)."""
    items: list[dict[str, Any]] = client.get(f"/api/v1/jobs/{job_id}/events",
                                             headers=user.headers).json()["items"]
    return [e for e in items if e["from_state"] != e["to_state"]]


def sh(script: str) -> dict[str, Any]:
    """A spec running `script` with /bin/sh in the job directory."""
    return {"executable": "/bin/sh", "args": ["-c", script]}
