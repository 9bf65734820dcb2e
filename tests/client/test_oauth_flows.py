"""The client side of the OAuth flows against the gateway's own authorization server."""

from __future__ import annotations

import itertools
import re
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from gateway.auth.accounts import create_local_user
from gateway.client.credentials import Credentials, CredentialStore, StoredTokenProvider
from gateway.client.oauth import CLI_CLIENT_ID, AuthorizationServer, OAuthError
from gateway.db.engine import transaction
from tests.client.live import LiveGateway

PASSWORD = "correct horse battery staple"


def approve(gateway: LiveGateway, user_code: str, username: str, action: str = "approve"
            ) -> None:
    with httpx.Client(base_url=gateway.url) as browser:
        page = browser.get("/oauth/device", params={"user_code": user_code})
        match = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
        assert match, page.text
        answer = browser.post("/oauth/device", data={
            "csrf_token": match.group(1), "user_code": user_code, "username": username,
            "password": PASSWORD, "action": action})
        assert answer.status_code == 200, answer.text


def new_user(gateway: LiveGateway) -> str:
    name = f"u{uuid.uuid4().hex[:10]}"
    with transaction(gateway.runtime.sessions) as session:
        create_local_user(session, name, PASSWORD)
    return name


def test_device_flow_honours_slow_down(gateway: LiveGateway) -> None:
    """Polling too fast earns `slow_down`; the client then waits 5 s longer each time."""
    username = new_user(gateway)
    with AuthorizationServer(gateway.url) as server:
        grant = server.device_authorization()
        assert re.fullmatch(r"[A-Z0-9-]{6,}", grant.user_code)
        assert grant.verification_uri == f"{gateway.url}/oauth/device"
        waits: list[float] = []

        def fake_sleep(seconds: float) -> None:
            # Do not really wait: the gateway sees polls arriving too fast.
            waits.append(seconds)
            if len(waits) == 3:
                approve(gateway, grant.user_code, username)

        token = server.poll_device_token(grant, sleep=fake_sleep)
    assert token.access_token and token.refresh_token
    assert set((token.scope or "").split()) == {"jobs:read", "jobs:write", "sites:read"}
    assert waits[0] == grant.interval
    assert waits[-1] > waits[0]  # slowed down
    assert all(b - a in (0, 5) for a, b in itertools.pairwise(waits))


def test_device_flow_denied(gateway: LiveGateway) -> None:
    username = new_user(gateway)
    with AuthorizationServer(gateway.url) as server:
        grant = server.device_authorization()
        approve(gateway, grant.user_code, username, action="deny")
        with pytest.raises(OAuthError) as info:
            server.poll_device_token(grant, sleep=lambda s: time.sleep(min(s, 1.1)))
    assert info.value.error == "access_denied"
    assert "denied" in info.value.message


def test_device_flow_gives_up_at_expiry(gateway: LiveGateway) -> None:
    with AuthorizationServer(gateway.url) as server:
        grant = server.device_authorization()
        now = [0.0]

        def clock() -> float:
            return now[0]

        def sleep(seconds: float) -> None:
            now[0] += grant.expires_in  # the person never comes back

        with pytest.raises(OAuthError) as info:
            server.poll_device_token(grant, sleep=sleep, clock=clock)
    assert info.value.error == "expired_token"
    assert "gridgate login" in info.value.message


def test_client_credentials_and_refresh_errors(gateway: LiveGateway) -> None:
    client_id, secret = gateway.new_client("oauth-tests")
    with AuthorizationServer(gateway.url) as server:
        token = server.client_credentials(client_id, secret)
        assert token.access_token and token.refresh_token is None
        narrow = server.client_credentials(client_id, secret, scope="jobs:read")
        assert narrow.scope == "jobs:read"
        with pytest.raises(OAuthError) as wrong:
            server.client_credentials(client_id, secret + "x")
        assert wrong.value.error == "invalid_client"
        with pytest.raises(OAuthError) as bogus:
            server.refresh("not-a-refresh-token", CLI_CLIENT_ID)
        assert bogus.value.error == "invalid_grant"
        server.revoke("not-a-token", "refresh_token")  # RFC 7009: unknown is fine


def test_concurrent_refreshes_do_not_replay_the_refresh_token(
        gateway: LiveGateway, tmp_path: Path) -> None:
    """Two commands refreshing at once: the file lock makes the second reuse the first's
    new token instead of replaying the rotated one (which would revoke the session)."""
    username = new_user(gateway)
    with AuthorizationServer(gateway.url) as server:
        grant = server.device_authorization()
        approve(gateway, grant.user_code, username)
        token = server.poll_device_token(grant, sleep=lambda s: None)
        store = CredentialStore(tmp_path / "credentials.json")
        store.save(replace(Credentials.from_token(gateway.url, token, CLI_CLIENT_ID,
                                                  server.token_endpoint),
                           expires_at=time.time() + 1))
    results: list[str] = []
    failures: list[BaseException] = []

    def refresh() -> None:
        try:
            results.append(StoredTokenProvider(gateway.url, CredentialStore(store.path))())
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=refresh) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert failures == []
    assert len(set(results)) == 1 and results[0] != token.access_token
    final = store.load()
    assert final is not None and final.access_token == results[0]
    # The stored refresh token is still live.
    with AuthorizationServer(gateway.url) as server:
        assert server.refresh(final.refresh_token or "", CLI_CLIENT_ID).access_token
