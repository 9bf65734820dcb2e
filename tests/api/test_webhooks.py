"""POST/GET/DELETE /api/v1/webhooks: refused targets and types are 422 problems saying
what to change, the secret is shown once, and another user's subscription is 404."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from gateway.runtime import Runtime
from tests.conftest import MakeUser


@pytest.mark.parametrize("url", ["http://127.0.0.1:9/hook", "https://10.0.0.7/hook",
                                 "https://[::1]/hook", "https://169.254.169.254/latest",
                                 "http://localhost/hook"])
def test_a_private_target_without_the_admin_range_is_refused(
        client: TestClient, make_user: MakeUser, url: str) -> None:
    response = client.post("/api/v1/webhooks", headers=make_user().headers, json={"url": url})
    assert response.status_code == 422, response.text
    assert response.headers["content-type"] == "application/problem+json"
    assert "webhook_allowed_ranges" in response.json()["detail"]


@pytest.mark.parametrize("url", ["ftp://example.org/x", "https://user:pw@example.org/",
                                 "not a url", "https:///nohost"])
def test_a_malformed_target_is_refused(client: TestClient, make_user: MakeUser,
                                       url: str) -> None:
    response = client.post("/api/v1/webhooks", headers=make_user().headers, json={"url": url})
    assert response.status_code == 422, response.text


def test_an_unknown_event_type_names_the_valid_ones(
        client: TestClient, make_user: MakeUser, runtime: Runtime,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime.settings, "webhook_allowed_ranges", "127.0.0.0/8")
    response = client.post("/api/v1/webhooks", headers=make_user().headers,
                           json={"url": "http://127.0.0.1:9/h", "types": ["job.done"]})
    assert response.status_code == 422
    assert "org.gridgate.job.state" in response.json()["detail"]


def test_the_secret_is_shown_once_and_others_see_nothing(
        client: TestClient, make_user: MakeUser, runtime: Runtime,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime.settings, "webhook_allowed_ranges", "127.0.0.0/8")
    alice, bob = make_user(), make_user()
    created = client.post("/api/v1/webhooks", headers=alice.headers,
                          json={"url": "http://127.0.0.1:9/h"})
    assert created.status_code == 201, created.text
    hook = created.json()
    assert created.headers["location"] == f"/api/v1/webhooks/{hook['id']}"
    assert hook["state"] == "active" and hook["secret"].startswith("whsec_")
    shown = client.get(f"/api/v1/webhooks/{hook['id']}", headers=alice.headers).json()
    assert "secret" not in shown
    listed = client.get("/api/v1/webhooks", headers=alice.headers).json()["items"]
    assert [h["id"] for h in listed] == [hook["id"]] and "secret" not in listed[0]
    assert client.get("/api/v1/webhooks", headers=bob.headers).json()["items"] == []
    for method, path in [("GET", ""), ("DELETE", ""), ("GET", "/deliveries"),
                         ("POST", "/deliveries/1/redeliver")]:
        answer = client.request(method, f"/api/v1/webhooks/{hook['id']}{path}",
                                headers=bob.headers)
        assert answer.status_code == 404, (method, path)
    # A job of Bob's cannot be a filter of Alice's either.
    assert client.delete(f"/api/v1/webhooks/{hook['id']}", headers=alice.headers
                         ).status_code == 204
    assert client.get(f"/api/v1/webhooks/{hook['id']}", headers=alice.headers
                      ).status_code == 404


def test_creating_needs_the_write_scope(client: TestClient, make_user: MakeUser) -> None:
    reader = make_user(scope="jobs:read")
    assert client.get("/api/v1/webhooks", headers=reader.headers).status_code == 200
    response = client.post("/api/v1/webhooks", headers=reader.headers,
                           json={"url": "https://example.org/h"})
    assert response.status_code == 403
