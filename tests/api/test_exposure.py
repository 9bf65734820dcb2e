"""What the API shows to whom: no redirect built from a forged Host, and /metrics for
loopback scrapers by default or for holders of the metrics token."""

from __future__ import annotations

from fastapi.testclient import TestClient
from pydantic import SecretStr

from gateway.api.app import create_app
from gateway.runtime import Runtime
from tests.conftest import MakeUser

REMOTE = ("203.0.113.9", 40000)


def test_trailing_slash_is_404_not_a_redirect_to_the_host_header(
        client: TestClient, make_user: MakeUser) -> None:
    user = make_user()
    r = client.get("/api/v1/jobs/", headers={**user.headers, "Host": "evil.example"},
                   follow_redirects=False)
    assert r.status_code == 404 and "location" not in r.headers
    assert r.headers["content-type"] == "application/problem+json"


def test_metrics_answer_loopback_only_by_default(client: TestClient, runtime: Runtime) -> None:
    assert client.get("/metrics").status_code == 200
    with TestClient(create_app(runtime=runtime), client=REMOTE) as remote:
        refused = remote.get("/metrics")
    assert refused.status_code == 403, refused.text
    assert "GRIDGATE_METRICS_TOKEN" in refused.json()["detail"]


def test_metrics_behind_a_token(client: TestClient, runtime: Runtime) -> None:
    runtime.settings = runtime.settings.model_copy(
        update={"metrics_token": SecretStr("scrape-me")})
    with TestClient(create_app(runtime=runtime), client=REMOTE) as remote:
        assert remote.get("/metrics").status_code == 401
        wrong = remote.get("/metrics", headers={"Authorization": "Bearer guess"})
        assert wrong.status_code == 401 and wrong.headers["www-authenticate"]
        right = remote.get("/metrics", headers={"Authorization": "Bearer scrape-me"})
        assert right.status_code == 200 and "gridgate_http_requests" in right.text
    # With a token set, being local is not enough.
    assert client.get("/metrics").status_code == 401
