"""Client credentials (RFC 6749 §4.4) for automation, with client_secret_basic and _post."""

from __future__ import annotations

from fastapi.testclient import TestClient
from joserfc import jwt
from joserfc.jwk import KeySet

from gateway.auth.accounts import create_client, create_local_user
from gateway.db.engine import transaction
from gateway.db.models import User
from tests.auth.conftest import AuthRuntime


def robot(auth: AuthRuntime, scopes: tuple[str, ...] = ("jobs:read", "jobs:write"),
          user_id: str | None = None) -> tuple[str, str]:
    with transaction(auth.sessions) as session:
        client, secret = create_client(session, "nightly-pipeline", list(scopes),
                                       ["client_credentials"], user_id)
        assert secret is not None
        return client.client_id, secret


def test_client_secret_basic(api: TestClient, auth: AuthRuntime) -> None:
    client_id, secret = robot(auth)
    response = api.post("/oauth/token", data={"grant_type": "client_credentials"},
                        auth=(client_id, secret))
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["token_type"] == "Bearer" and body["scope"] == "jobs:read jobs:write"
    assert "refresh_token" not in body
    claims = jwt.decode(body["access_token"], KeySet.import_key_set(auth.keys.jwks())).claims
    assert claims["client_id"] == client_id and "username" not in claims
    me = api.get("/whoami", headers={"Authorization": f"Bearer {body['access_token']}"}).json()
    assert me["scopes"] == ["jobs:read", "jobs:write"] and me["user_id"] == claims["sub"]
    with transaction(auth.sessions) as session:
        service_user = session.get(User, claims["sub"])
        assert service_user is not None and client_id in (service_user.display_name or "")


def test_client_secret_post_and_scope_narrowing(api: TestClient, auth: AuthRuntime) -> None:
    client_id, secret = robot(auth)
    response = api.post("/oauth/token", data={"grant_type": "client_credentials",
                                              "client_id": client_id, "client_secret": secret,
                                              "scope": "jobs:read"})
    assert response.status_code == 200, response.text
    assert response.json()["scope"] == "jobs:read"
    outside = api.post("/oauth/token", data={"grant_type": "client_credentials",
                                             "scope": "sites:read"}, auth=(client_id, secret))
    assert outside.status_code == 400 and outside.json()["error"] == "invalid_scope"


def test_client_acting_as_a_named_user(api: TestClient, auth: AuthRuntime) -> None:
    with transaction(auth.sessions) as session:
        owner = create_local_user(session, "carol", "correct horse battery").id
    client_id, secret = robot(auth, user_id=owner)
    token = api.post("/oauth/token", data={"grant_type": "client_credentials"},
                     auth=(client_id, secret)).json()["access_token"]
    me = api.get("/whoami", headers={"Authorization": f"Bearer {token}"}).json()
    assert me["user_id"] == owner and me["username"] == "carol"


def test_wrong_or_missing_secret_is_invalid_client(api: TestClient, auth: AuthRuntime) -> None:
    client_id, secret = robot(auth)
    wrong = api.post("/oauth/token", data={"grant_type": "client_credentials"},
                     auth=(client_id, secret[:-1]))
    assert wrong.status_code == 401 and wrong.json()["error"] == "invalid_client"
    assert wrong.headers["www-authenticate"].startswith("Basic")
    missing = api.post("/oauth/token", data={"grant_type": "client_credentials",
                                             "client_id": client_id})
    assert missing.status_code == 401 and missing.json()["error"] == "invalid_client"
    # The public CLI client cannot use client credentials at all.
    public = api.post("/oauth/token", data={"grant_type": "client_credentials",
                                            "client_id": "gridgate-cli"})
    assert public.json()["error"] == "invalid_client"


def test_disabled_service_user_gets_no_token(api: TestClient, auth: AuthRuntime) -> None:
    client_id, secret = robot(auth)
    token = api.post("/oauth/token", data={"grant_type": "client_credentials"},
                     auth=(client_id, secret)).json()["access_token"]
    sub = jwt.decode(token, KeySet.import_key_set(auth.keys.jwks())).claims["sub"]
    with transaction(auth.sessions) as session:
        user = session.get(User, sub)
        assert user is not None
        user.disabled = True
    refused = api.post("/oauth/token", data={"grant_type": "client_credentials"},
                       auth=(client_id, secret))
    assert refused.status_code == 400 and refused.json()["error"] == "invalid_grant"
