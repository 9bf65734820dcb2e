"""GET /dashboard in-process: the sign-in form until signed in, the sign-in itself (CSRF,
wrong password, a session cookie holding a read-only token), the sign-out (CSRF, the token
revoked), a bearer token instead, and the page's figures for that caller. The browser test
(tests/browser) drives the same page in Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from gateway.api.routes.dashboard import CSRF_COOKIE, SESSION_COOKIE
from gateway.db.engine import transaction
from gateway.runtime import Runtime
from tests.conftest import MakeUser, TestUser
from tests.services import report_fixtures as rf
from tests.services.bank_fixtures import NOW
from tests.services.report_fixtures import World

PASSWORD = "correct horse battery"  # tests.conftest's make_user password


@pytest.fixture
def people(runtime: Runtime, make_user: MakeUser) -> Iterator[tuple[World, TestUser,
                                                                    TestUser]]:
    pi, member, other = (make_user() for _ in range(3))
    with transaction(runtime.sessions) as s:
        world = rf.build(s, pi.principal.user_id, member.principal.user_id,
                         other.principal.user_id)
    clock, runtime.clock = runtime.clock, lambda: NOW
    yield world, pi, other
    runtime.clock = clock


def _cell(html: str, field: str) -> str:
    found = re.search(rf'data-field="{field}">([^<]*)<', html)
    assert found, field
    return found.group(1).strip()


def test_sign_in_then_the_page(client: TestClient, people: tuple[World, TestUser, TestUser]
                               ) -> None:
    world, pi, _ = people
    form = client.get("/dashboard")
    assert form.status_code == 401 and 'action="/dashboard/login"' in form.text
    assert form.headers["x-frame-options"] == "DENY"
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
    assert csrf and client.cookies.get(CSRF_COOKIE) == csrf.group(1)
    body = {"csrf_token": csrf.group(1), "username": pi.principal.username,
            "password": "wrong"}
    wrong = client.post("/dashboard/login", data=body, follow_redirects=False)
    assert wrong.status_code == 400 and "Wrong username or password." in wrong.text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', wrong.text)
    assert csrf
    forged = client.post("/dashboard/login", follow_redirects=False, data={
        **body, "csrf_token": "not-the-cookie", "password": PASSWORD})
    assert forged.status_code == 403
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', forged.text)
    assert csrf
    signed = client.post("/dashboard/login", follow_redirects=False,
                         data={**body, "csrf_token": csrf.group(1), "password": PASSWORD})
    assert signed.status_code == 303 and signed.headers["location"] == "/dashboard"
    cookie = signed.headers["set-cookie"]
    assert SESSION_COOKIE in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert "Path=/dashboard" in cookie
    page = client.get("/dashboard", params={"project": world.astro})
    assert page.status_code == 200
    assert (_cell(page.text, "awarded_su"), _cell(page.text, "remaining_su")) == (
        "110.000", "95.000")
    assert page.text.count('data-chart="burn-down"') == 1
    logout = client.post("/dashboard/logout", follow_redirects=False,
                         data={"csrf_token": client.cookies.get(CSRF_COOKIE)})
    assert logout.status_code == 303
    assert client.get("/dashboard").status_code == 401


def _signed_in(client: TestClient, user: TestUser) -> str:
    """Sign in on the form; the session's token (the cookie's value)."""
    form = client.get("/dashboard")
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
    assert csrf
    signed = client.post("/dashboard/login", follow_redirects=False, data={
        "csrf_token": csrf.group(1), "username": user.principal.username,
        "password": PASSWORD})
    assert signed.status_code == 303
    token = client.cookies.get(SESSION_COOKIE)
    assert token
    return token


def test_sign_out_needs_the_pages_token_and_revokes_the_session(
        client: TestClient, people: tuple[World, TestUser, TestUser]) -> None:
    world, pi, _ = people
    token = _signed_in(client, pi)
    bearer = {"Authorization": f"Bearer {token}"}
    balance = f"/api/v1/projects/{world.astro}/balance"
    assert client.get(balance, headers=bearer).status_code == 200
    page = client.get("/dashboard")
    assert page.status_code == 200
    csrf = re.search(r'action="/dashboard/logout">.*?name="csrf_token" value="([^"]+)"',
                     page.text, re.S)
    assert csrf and client.cookies.get(CSRF_COOKIE) == csrf.group(1)
    # What another site's page can send: no token, a wrong one, or none of the cookie
    # (SameSite=Strict keeps it from a cross-site POST).
    foreign = TestClient(client.app, base_url=str(client.base_url),
                         cookies={SESSION_COOKIE: token})
    for sender, data in ((client, {}), (client, {"csrf_token": "x" * 43}),
                         (foreign, {"csrf_token": csrf.group(1)})):
        refused = sender.post("/dashboard/logout", data=data, follow_redirects=False)
        assert refused.status_code == 403, refused.text
        assert "you are still signed in" in refused.text
        assert "set-cookie" not in refused.headers
        assert client.get("/dashboard").status_code == 200
        assert client.get(balance, headers=bearer).status_code == 200
    # A second tab's page keeps the same token, so either tab can sign out.
    assert csrf.group(1) in client.get("/dashboard").text
    out = client.post("/dashboard/logout", data={"csrf_token": csrf.group(1)},
                      follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/dashboard"
    assert client.cookies.get(SESSION_COOKIE) is None
    # The token itself is dead, wherever it is sent.
    again = foreign.get("/dashboard")
    assert again.status_code == 401 and "session has ended" in again.text
    assert client.get("/dashboard", headers=bearer).status_code == 401
    api = client.get(balance, headers=bearer)
    assert api.status_code == 401 and "revoked" in api.json()["detail"]
    # Signing in again gives a new session.
    assert client.get(balance, headers={
        "Authorization": f"Bearer {_signed_in(client, pi)}"}).status_code == 200


def test_a_bearer_token_and_what_it_may_see(
        client: TestClient, make_user: MakeUser, people: tuple[World, TestUser, TestUser]
) -> None:
    world, pi, other = people
    page = client.get("/dashboard", headers=pi.headers)
    assert page.status_code == 200 and world.astro in page.text
    # Another project does not exist for the caller, as on the API.
    missing = client.get("/dashboard", params={"project": world.astro}, headers=other.headers)
    assert missing.status_code == 404 and "No project named" in missing.text
    bad = client.get("/dashboard", params={"as_of": "yesterday"}, headers=pi.headers)
    assert bad.status_code == 400 and "is not a time" in bad.text
    narrow = make_user(scope="sites:read")
    assert client.get("/dashboard", headers=narrow.headers).status_code == 403
    expired = client.get("/dashboard", headers={"Authorization": "Bearer not-a-token"})
    assert expired.status_code == 401 and "session has ended" in expired.text
