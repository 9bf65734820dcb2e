"""The portal's pages and session in-process: a page sends a person without a session to
the sign-in form and back (never to another site), the session cookie (HttpOnly,
SameSite=Strict, path /) works for the API but a write needs the page's CSRF token, the
Authorization header wins over the cookie, sign-out needs the same token and revokes the
session, another user's job is a 404 page, and the static files are served compressed
with their digest. The browser test (tests/browser/test_portal.py) drives the pages in
Chromium."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

from gateway.api.portal import assets, session
from gateway.api.portal.pages import LOGIN_CSRF_COOKIE
from tests.api.test_jobs_api import submit
from tests.conftest import MakeUser, TestUser

PASSWORD = "correct horse battery"  # tests.conftest's make_user password


def _sign_in(client: TestClient, user: TestUser, next_page: str = "/portal/jobs") -> str:
    form = client.get("/portal/login", params={"next": next_page})
    assert form.status_code == 200
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
    assert csrf and client.cookies.get(LOGIN_CSRF_COOKIE) == csrf.group(1)
    signed = client.post("/portal/login", follow_redirects=False, data={
        "csrf_token": csrf.group(1), "username": user.principal.username,
        "password": PASSWORD, "next": next_page})
    assert signed.status_code == 303, signed.text
    assert signed.headers["location"] == next_page
    cookie = signed.headers["set-cookie"]
    assert f"{session.COOKIE}=" in cookie and "HttpOnly" in cookie
    assert "SameSite=strict" in cookie and "Path=/;" in cookie
    token = client.cookies.get(session.COOKIE)
    assert token
    return token


def test_a_page_asks_for_sign_in_and_comes_back(client: TestClient,
                                                make_user: MakeUser) -> None:
    alice = make_user()
    page = client.get("/portal/jobs?state=RUNNING", follow_redirects=False)
    assert page.status_code == 303
    assert page.headers["location"] == "/portal/login?next=/portal/jobs%3Fstate%3DRUNNING"
    token = _sign_in(client, alice, "/portal/jobs?state=RUNNING")
    page = client.get("/portal/jobs")
    assert page.status_code == 200
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert f'<meta name="csrf-token" content="{session.csrf_token(token)}">' in page.text
    assert alice.principal.username in page.text
    assert client.get("/portal", follow_redirects=False).headers["location"] == "/portal/jobs"


OFF_PORTAL = ["https://evil.example/", "//evil.example/portal", "/portal//evil.example",
              "/api/v1/jobs", "/portal/jobs\nSet-Cookie: x=y", "javascript:alert(1)"]


def test_sign_in_never_goes_off_the_portal(client: TestClient, make_user: MakeUser) -> None:
    for wanted in OFF_PORTAL:
        form = client.get("/portal/login", params={"next": wanted})
        assert 'name="next" value="/portal/jobs"' in form.text, wanted
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form.text)
    assert csrf
    alice = make_user()
    signed = client.post("/portal/login", follow_redirects=False, data={
        "csrf_token": csrf.group(1), "username": alice.principal.username,
        "password": PASSWORD, "next": OFF_PORTAL[0]})
    assert signed.headers["location"] == "/portal/jobs"


def test_the_session_cookie_and_its_csrf_token(client: TestClient,
                                               make_user: MakeUser) -> None:
    alice = make_user()
    token = _sign_in(client, alice)
    spec = {"name": "p", "executable": "/bin/true"}
    assert client.get("/api/v1/me").json()["user"] == alice.principal.username
    refused = client.post("/api/v1/jobs", json=spec)
    assert refused.status_code == 403 and "X-CSRF-Token" in refused.json()["detail"]
    wrong = client.post("/api/v1/jobs", json=spec, headers={"X-CSRF-Token": "0" * 64})
    assert wrong.status_code == 403
    made = client.post("/api/v1/jobs", json=spec,
                       headers={"X-CSRF-Token": session.csrf_token(token)})
    assert made.status_code == 202
    # A bearer token is the caller even with the cookie there; a bad one is refused.
    bob = make_user()
    assert client.get("/api/v1/me", headers=bob.headers).json()["user"] == bob.principal.username
    assert client.get("/api/v1/me", headers={"Authorization": "Bearer nope"}).status_code == 401


def test_sign_out_needs_the_pages_token_and_revokes(client: TestClient,
                                                    make_user: MakeUser) -> None:
    alice = make_user()
    token = _sign_in(client, alice)
    forged = client.post("/portal/logout", data={"csrf_token": "x"}, follow_redirects=False)
    assert forged.status_code == 403
    assert client.get("/api/v1/me").status_code == 200
    out = client.post("/portal/logout", data={"csrf_token": session.csrf_token(token)},
                      follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/portal/login"
    assert client.get("/api/v1/me", headers={"Authorization": f"Bearer {token}"}
                      ).status_code == 401
    # A page with the dead cookie: sign in again, told why.
    client.cookies.set(session.COOKIE, token)
    page = client.get("/portal/jobs", follow_redirects=False)
    assert page.status_code == 303 and page.headers["location"].endswith("&ended=1")


def test_another_users_job_is_a_404_page(client: TestClient, make_user: MakeUser) -> None:
    alice, bob = make_user(), make_user()
    bobs = submit(client, bob.headers)
    own = submit(client, alice.headers)
    _sign_in(client, alice)
    assert client.get(f"/portal/jobs/{own['id']}").status_code == 200
    for missing in (bobs["id"], "00000000-0000-4000-8000-000000000000", "not-an-id"):
        page = client.get(f"/portal/jobs/{missing}")
        assert page.status_code == 404 and "<h1>Not found</h1>" in page.text
    assert client.get("/portal/workflows/not-an-id").status_code == 404


def test_static_files_compressed_with_their_digest(client: TestClient) -> None:
    for name, asset in assets.assets().items():
        url = assets.url(name)
        plain = client.get(url, headers={"Accept-Encoding": "identity"})
        assert plain.status_code == 200 and plain.content == asset.body
        assert plain.headers["cache-control"] == "public, max-age=31536000, immutable"
        zipped = client.get(url, headers={"Accept-Encoding": "gzip"})
        # httpx decodes the body: the same bytes, sent compressed.
        assert zipped.headers["content-encoding"] == "gzip" and zipped.content == asset.body
        assert int(zipped.headers["content-length"]) == len(asset.gzipped) < len(asset.body)
        etag = plain.headers["etag"]
        assert client.get(url, headers={"If-None-Match": etag}).status_code == 304
    stale = client.get("/portal/static/portal.js?v=old")
    assert stale.headers["cache-control"] == "no-cache"
    assert client.get("/portal/static/nothing.js").status_code == 404
    assert client.get("/portal/static/../pages.py").status_code == 404
