"""Every failure reaches the client as RFC 9457 problem details, never a bare 500 page."""

from __future__ import annotations

from fastapi.testclient import TestClient

from gateway.db.engine import make_engine
from gateway.runtime import Runtime
from tests.conftest import MakeUser


def test_unknown_route_and_method(client: TestClient) -> None:
    r = client.get("/api/v1/nope")
    assert r.status_code == 404 and r.headers["content-type"] == "application/problem+json"
    r = client.delete("/api/v1/health")
    assert r.status_code == 405 and r.json()["status"] == 405


def test_database_outage_is_503_with_retry_after(client: TestClient, runtime: Runtime,
                                                 make_user: MakeUser) -> None:
    user = make_user()
    healthy = runtime.reader_engine
    # Nothing listens on port 1: every read fails to connect.
    runtime.reader_engine = make_engine("postgresql+psycopg://nobody@127.0.0.1:1/none",
                                        connect_args={"connect_timeout": 2})
    try:
        r = client.get("/api/v1/jobs", headers=user.headers)
        assert r.status_code == 503, r.text
        assert r.headers["retry-after"] == "5"
        assert "database is unavailable" in r.json()["detail"]
        health = client.get("/api/v1/health")
        assert health.status_code == 503 and health.json()["status"] == "degraded"
    finally:
        runtime.reader_engine.dispose()
        runtime.reader_engine = healthy
    assert client.get("/api/v1/jobs", headers=user.headers).status_code == 200
