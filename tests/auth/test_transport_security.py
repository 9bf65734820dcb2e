"""The built-in issuer's endpoints take secrets: over plain http they answer loopback
clients only, unless GRIDGATE_TRUST_PROXY_TLS says a TLS proxy's X-Forwarded-Proto counts."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

from tests.auth.conftest import AuthRuntime, make_app, make_auth_runtime
from tests.auth.test_device_flow import CLI, add_user, error_of

REMOTE = ("203.0.113.9", 40000)
LOOPBACK = ("127.0.0.1", 40000)
HTTP_URL = "http://gateway.test"
CLIENT_CREDENTIALS = {"grant_type": "client_credentials", "client_id": "robot",
                      "client_secret": "nope"}


def _token(auth: AuthRuntime, client: tuple[str, int], base_url: str = HTTP_URL,
           headers: dict[str, str] | None = None) -> httpx.Response:
    with TestClient(make_app(auth), base_url=base_url, client=client) as api:
        return api.post("/oauth/token", data=CLIENT_CREDENTIALS, headers=headers)


def _refused_for_http(response: httpx.Response) -> bool:
    return response.status_code == 400 and "Use https" in response.text


def test_plain_http_from_a_remote_client_is_refused(auth: AuthRuntime) -> None:
    refused = _token(auth, REMOTE)
    assert _refused_for_http(refused) and error_of(refused) == "invalid_request"
    with TestClient(make_app(auth), base_url=HTTP_URL, client=REMOTE) as api:
        for path in ("/oauth/device_authorization", "/oauth/revoke"):
            assert _refused_for_http(api.post(path, data={"client_id": CLI}))
        form = api.get("/oauth/device")
        assert _refused_for_http(form) and "text/html" in form.headers["content-type"]
        page = api.post("/oauth/device", data={"username": "alice", "password": "p"})
        assert _refused_for_http(page) and "text/html" in page.headers["content-type"]
    # Anyone can claim https in a header; without the setting it counts for nothing.
    assert _refused_for_http(_token(auth, REMOTE, headers={"X-Forwarded-Proto": "https"}))


def test_https_or_loopback_go_through(auth: AuthRuntime) -> None:
    over_https = _token(auth, REMOTE, base_url="https://gateway.test")
    # Past the transport check: the (unknown) client is what fails.
    assert error_of(over_https) == "invalid_client"
    assert error_of(_token(auth, LOOPBACK)) == "invalid_client"


@pytest.fixture
def behind_proxy(tmp_path: Path, database_url: str, auth: AuthRuntime) -> AuthRuntime:
    rt = make_auth_runtime(tmp_path, database_url, trust_proxy_tls=True)
    add_user(rt, "bob")
    return rt


def test_behind_a_tls_proxy_its_forwarded_proto_decides(behind_proxy: AuthRuntime) -> None:
    try:
        forwarded_https = _token(behind_proxy, REMOTE, headers={"X-Forwarded-Proto": "https"})
        assert error_of(forwarded_https) == "invalid_client"
        assert _refused_for_http(_token(behind_proxy, LOOPBACK,
                                        headers={"X-Forwarded-Proto": "http"}))
        assert _refused_for_http(_token(behind_proxy, REMOTE))
    finally:
        behind_proxy.close()
