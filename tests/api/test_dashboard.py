"""GET /dashboard in-process: the sign-in form until signed in, the sign-in itself (CSRF,
wrong password, a session cookie holding a read-only token), a bearer token instead, and
the page's figures for that caller. The browser test (tests/browser) drives the same page
in Chromium."""

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
    client.post("/dashboard/logout", follow_redirects=False)
    assert client.get("/dashboard").status_code == 401


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
