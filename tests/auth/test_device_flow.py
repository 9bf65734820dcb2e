"""The built-in authorization server over HTTP: device flow (RFC 8628) end to end,
refresh-token rotation, revocation (RFC 7009), metadata (RFC 8414) and JWKS."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from fastapi.testclient import TestClient
from joserfc import jwt
from joserfc.jwk import KeySet

from gateway.auth.accounts import create_client, create_local_user
from gateway.db.engine import transaction
from gateway.db.models import DeviceCode, RefreshToken
from tests.auth.conftest import PUBLIC_URL, AuthRuntime

DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
CLI = "gridgate-cli"
PASSWORD = "correct horse battery"


def add_user(auth: AuthRuntime, name: str = "alice") -> None:
    with transaction(auth.sessions) as session:
        create_local_user(session, name, PASSWORD)


def start(api: TestClient, **extra: str) -> dict[str, Any]:
    response = api.post("/oauth/device_authorization", data={"client_id": CLI, **extra})
    assert response.status_code == 200, response.text
    assert response.headers["cache-control"] == "no-store"
    return response.json()  # type: ignore[no-any-return]


def poll(api: TestClient, device_code: str) -> httpx.Response:
    return api.post("/oauth/token", data={"grant_type": DEVICE_GRANT,
                                          "device_code": device_code, "client_id": CLI})


def csrf_from(page: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert match, page
    return match.group(1)


def decide(api: TestClient, user_code: str, *, username: str = "alice",
           password: str = PASSWORD, action: str = "approve") -> httpx.Response:
    page = api.get("/oauth/device", params={"user_code": user_code})
    assert page.status_code == 200
    return api.post("/oauth/device", data={
        "csrf_token": csrf_from(page.text), "user_code": user_code, "username": username,
        "password": password, "action": action})


def login(api: TestClient, **extra: str) -> dict[str, Any]:
    grant = start(api, **extra)
    assert decide(api, grant["user_code"]).status_code == 200
    response = poll(api, grant["device_code"])
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def error_of(response: httpx.Response) -> str:
    body = response.json()
    assert set(body) <= {"error", "error_description", "error_uri"}, body
    return str(body["error"])


def refresh(api: TestClient, token: str) -> httpx.Response:
    return api.post("/oauth/token", data={"grant_type": "refresh_token",
                                          "refresh_token": token, "client_id": CLI})


def test_metadata_and_jwks(api: TestClient, auth: AuthRuntime) -> None:
    meta = api.get("/.well-known/oauth-authorization-server").json()
    assert meta["issuer"] == PUBLIC_URL
    assert meta["token_endpoint"] == f"{PUBLIC_URL}/oauth/token"
    assert meta["device_authorization_endpoint"] == f"{PUBLIC_URL}/oauth/device_authorization"
    assert meta["revocation_endpoint"] == f"{PUBLIC_URL}/oauth/revoke"
    assert meta["jwks_uri"] == f"{PUBLIC_URL}/.well-known/jwks.json"
    assert set(meta["grant_types_supported"]) == {DEVICE_GRANT, "client_credentials",
                                                  "refresh_token"}
    jwks = api.get("/.well-known/jwks.json").json()
    assert [k["kid"] for k in jwks["keys"]] == [auth.keys.kid]
    assert "d" not in jwks["keys"][0]


def test_device_flow_end_to_end(api: TestClient, auth: AuthRuntime) -> None:
    add_user(auth)
    grant = start(api)
    assert re.fullmatch(r"[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}",
                        grant["user_code"])
    assert grant["verification_uri"] == f"{PUBLIC_URL}/oauth/device"
    assert grant["verification_uri_complete"] == (
        f"{PUBLIC_URL}/oauth/device?user_code={grant['user_code']}")
    assert grant["interval"] == 60 and grant["expires_in"] == auth.settings.device_code_ttl_seconds

    # Nobody has approved yet; polling again at once is too fast.
    first = poll(api, grant["device_code"])
    assert first.status_code == 400 and error_of(first) == "authorization_pending"
    second = poll(api, grant["device_code"])
    assert error_of(second) == "slow_down"

    # The verification page: the code is pre-filled; wrong password does not approve.
    page = api.get(grant["verification_uri_complete"].removeprefix(PUBLIC_URL))
    assert page.status_code == 200 and grant["user_code"] in page.text
    assert page.headers["x-frame-options"] == "DENY"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    wrong = decide(api, grant["user_code"], password="not the password")
    assert wrong.status_code == 400 and "Wrong username or password" in wrong.text
    assert error_of(poll(api, grant["device_code"])) in ("authorization_pending", "slow_down")

    # Lower-case and without the dash is the same code.
    approved = decide(api, grant["user_code"].replace("-", "").lower())
    assert approved.status_code == 200 and "Approved" in approved.text

    tokens = poll(api, grant["device_code"]).json()
    assert tokens["token_type"] == "Bearer" and tokens["expires_in"] == 3600
    assert tokens["scope"] == "jobs:read jobs:write sites:read"
    access = jwt.decode(tokens["access_token"], KeySet.import_key_set(
        api.get("/.well-known/jwks.json").json()))
    assert access.header["typ"] == "at+jwt" and access.header["kid"] == auth.keys.kid
    assert access.claims["iss"] == PUBLIC_URL and access.claims["aud"] == "gridgate"
    assert access.claims["client_id"] == CLI and access.claims["username"] == "alice"
    assert {"sub", "exp", "iat", "nbf", "jti"} <= set(access.claims)
    me = api.get("/whoami", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert me.status_code == 200 and me.json()["username"] == "alice"
    assert me.json()["user_id"] == access.claims["sub"]

    # A device code yields tokens once.
    assert error_of(poll(api, grant["device_code"])) == "invalid_grant"

    # Refresh: new access and refresh tokens; the old refresh token is spent.
    renewed = refresh(api, tokens["refresh_token"])
    assert renewed.status_code == 200, renewed.text
    fresh = renewed.json()
    assert fresh["refresh_token"] != tokens["refresh_token"]
    assert api.get("/whoami", headers={
        "Authorization": f"Bearer {fresh['access_token']}"}).status_code == 200

    # Revoke (RFC 7009) the current refresh token: it stops working.
    revoked = api.post("/oauth/revoke", data={"token": fresh["refresh_token"],
                                              "token_type_hint": "refresh_token",
                                              "client_id": CLI})
    assert revoked.status_code == 200
    assert error_of(refresh(api, fresh["refresh_token"])) == "invalid_grant"
    # Unknown tokens are answered 200 too (RFC 7009 §2.2).
    assert api.post("/oauth/revoke", data={"token": "nonsense",
                                           "client_id": CLI}).status_code == 200


def test_refresh_token_reuse_revokes_the_family(api: TestClient, auth: AuthRuntime) -> None:
    add_user(auth)
    r1 = login(api)["refresh_token"]
    r2 = refresh(api, r1).json()["refresh_token"]
    replay = refresh(api, r1)
    assert replay.status_code == 400 and error_of(replay) == "invalid_grant"
    # The thief's replay also killed the legitimate holder's current token.
    assert error_of(refresh(api, r2)) == "invalid_grant"
    with transaction(auth.sessions) as session:
        rows = session.query(RefreshToken).all()
        assert rows and all(r.revoked_at is not None for r in rows)
        assert all(len(r.token_hash) == 64 and r.token_hash not in (r1, r2) for r in rows)


def test_narrower_scope_on_request_and_on_refresh(api: TestClient, auth: AuthRuntime) -> None:
    add_user(auth)
    tokens = login(api, scope="jobs:read sites:read")
    assert tokens["scope"] == "jobs:read sites:read"
    narrower = refresh(api, tokens["refresh_token"]).json()
    assert narrower["scope"] == "jobs:read sites:read"
    wider = api.post("/oauth/token", data={
        "grant_type": "refresh_token", "refresh_token": narrower["refresh_token"],
        "client_id": CLI, "scope": "jobs:write"})
    assert error_of(wider) == "invalid_scope"
    # A refused request does not spend the refresh token.
    assert refresh(api, narrower["refresh_token"]).status_code == 200
    unknown = api.post("/oauth/device_authorization",
                       data={"client_id": CLI, "scope": "jobs:read root"})
    assert error_of(unknown) == "invalid_scope"


def test_denied_login(api: TestClient, auth: AuthRuntime) -> None:
    add_user(auth)
    grant = start(api)
    denied = decide(api, grant["user_code"], action="deny")
    assert denied.status_code == 200 and "Denied" in denied.text
    response = poll(api, grant["device_code"])
    assert response.status_code == 400 and error_of(response) == "access_denied"


def test_expired_device_code(api: TestClient, auth: AuthRuntime) -> None:
    add_user(auth)
    grant = start(api)
    with transaction(auth.sessions) as session:
        row = session.query(DeviceCode).filter_by(user_code=grant["user_code"]).one()
        row.expires_at = datetime.now(UTC) - timedelta(seconds=1)
    assert error_of(poll(api, grant["device_code"])) == "expired_token"
    page = decide(api, grant["user_code"])
    assert page.status_code == 400 and "expired" in page.text


def test_bad_device_requests(api: TestClient, auth: AuthRuntime) -> None:
    assert error_of(poll(api, "made-up-code")) == "invalid_grant"
    unknown_client = api.post("/oauth/device_authorization", data={"client_id": "nobody"})
    assert unknown_client.status_code == 400 and error_of(unknown_client) == "invalid_client"
    with transaction(auth.sessions) as session:
        robot, secret = create_client(session, "robot", ["jobs:read"], ["client_credentials"])
        robot_id = robot.client_id
    # A confidential client must authenticate, and then may not use the device flow.
    anonymous = api.post("/oauth/device_authorization", data={"client_id": robot_id})
    assert anonymous.status_code == 401 and error_of(anonymous) == "invalid_client"
    not_allowed = api.post("/oauth/device_authorization", auth=(robot_id, secret or ""),
                           data={"scope": "jobs:read"})
    assert error_of(not_allowed) == "unauthorized_client"
    # Another client cannot redeem the CLI's device code.
    grant = start(api)
    stolen = api.post("/oauth/token", auth=(robot_id, secret or ""), data={
        "grant_type": DEVICE_GRANT, "device_code": grant["device_code"]})
    assert error_of(stolen) == "unauthorized_client"


def test_malformed_token_requests(api: TestClient) -> None:
    repeated = api.post("/oauth/token", content=b"grant_type=refresh_token&grant_type=x",
                        headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert repeated.status_code == 400 and error_of(repeated) == "invalid_request"
    as_json = api.post("/oauth/token", json={"grant_type": "client_credentials"})
    assert error_of(as_json) == "invalid_request"
    unsupported = api.post("/oauth/token", data={"grant_type": "password", "username": "a",
                                                 "password": "b", "client_id": CLI})
    assert error_of(unsupported) == "unsupported_grant_type"


def test_verification_page_escapes_and_needs_its_csrf_token(
        api: TestClient, auth: AuthRuntime) -> None:
    add_user(auth)
    evil = '"><script>alert(1)</script>'
    page = api.get("/oauth/device", params={"user_code": evil})
    assert "<script>alert(1)" not in page.text and "&lt;script&gt;" in page.text
    grant = start(api)
    # No token, or a token that is not this browser's cookie: refused, nothing approved.
    no_token = api.post("/oauth/device", data={"user_code": grant["user_code"],
                                               "username": "alice", "password": PASSWORD,
                                               "action": "approve"})
    assert no_token.status_code == 403
    forged = api.post("/oauth/device", data={"csrf_token": "guessed",
                                             "user_code": grant["user_code"],
                                             "username": "alice", "password": PASSWORD,
                                             "action": "approve"})
    assert forged.status_code == 403
    cookie = api.cookies.get("gridgate_device_csrf")
    assert cookie
    fresh = TestClient(api.app, base_url=PUBLIC_URL)  # another browser, no cookie
    cross_site = fresh.post("/oauth/device", data={"csrf_token": cookie,
                                                   "user_code": grant["user_code"],
                                                   "username": "alice", "password": PASSWORD,
                                                   "action": "approve"})
    assert cross_site.status_code == 403
    assert error_of(poll(api, grant["device_code"])) in ("authorization_pending", "slow_down")
    # The reflected username is escaped too.
    echoed = decide(api, grant["user_code"], username='<b onmouseover="x">')
    assert echoed.status_code == 400 and '<b onmouseover' not in echoed.text


def test_long_expired_device_codes_are_cleaned_up(api: TestClient, auth: AuthRuntime) -> None:
    old = start(api)
    with transaction(auth.sessions) as session:
        row = session.query(DeviceCode).filter_by(user_code=old["user_code"]).one()
        row.expires_at = datetime.now(UTC) - timedelta(hours=2)
    new = start(api)
    with transaction(auth.sessions) as session:
        assert [r.user_code for r in session.query(DeviceCode).all()] == [new["user_code"]]
