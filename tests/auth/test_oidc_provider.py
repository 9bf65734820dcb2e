"""A real third-party OpenID provider (npm oidc-provider) as an external issuer: its JWT
access tokens for our audience are accepted; its tokens for another audience are 401."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from joserfc import jwt
from joserfc.jwk import KeySet

from gateway.domain.errors import Unauthenticated
from tests.auth.conftest import PUBLIC_URL, AuthRuntime, external, make_app, make_auth_runtime
from tests.auth.oidc_fixture import OTHER_RESOURCE, OidcProvider


@pytest.fixture
def federated(tmp_path: Path, database_url: str,
              oidc_provider: OidcProvider) -> Iterator[AuthRuntime]:
    rt = make_auth_runtime(tmp_path, database_url, external_issuers=[
        external(oidc_provider.issuer, oidc_provider.jwks_uri, audience=oidc_provider.audience)])
    try:
        yield rt
    finally:
        rt.close()


def test_provider_issues_rfc9068_jwts(oidc_provider: OidcProvider) -> None:
    token = oidc_provider.client_credentials_token()
    header = json.loads(base64.urlsafe_b64decode(token.split(".")[0] + "=="))
    assert header["typ"] == "at+jwt" and header["alg"] == "RS256" and header["kid"]
    jwks = KeySet.import_key_set(httpx.get(oidc_provider.jwks_uri, timeout=30).json())
    claims = jwt.decode(token, jwks).claims
    assert claims["iss"] == oidc_provider.issuer and claims["aud"] == "gridgate"
    assert claims["scope"] == "jobs:read jobs:write"


def test_provider_access_token_is_accepted(federated: AuthRuntime,
                                           oidc_provider: OidcProvider) -> None:
    token = oidc_provider.client_credentials_token()
    principal = federated.authenticator.authenticate(token)
    assert principal.issuer == oidc_provider.issuer
    assert principal.subject == oidc_provider.client_id
    assert principal.scopes >= {"jobs:read", "jobs:write"}
    assert principal.roles == {"researcher"}
    with TestClient(make_app(federated), base_url=PUBLIC_URL) as api:
        me = api.get("/whoami", headers={"Authorization": f"Bearer {token}"})
        assert me.status_code == 200, me.text
        assert me.json()["user_id"] == principal.user_id
        # A second token from the provider maps to the same gateway user.
        again = oidc_provider.client_credentials_token(scope="jobs:read")
        me2 = api.get("/whoami", headers={"Authorization": f"Bearer {again}"}).json()
        assert me2["user_id"] == principal.user_id and me2["scopes"] == ["jobs:read"]


def test_provider_token_for_another_audience_is_401(federated: AuthRuntime,
                                                    oidc_provider: OidcProvider) -> None:
    token = oidc_provider.client_credentials_token(resource=OTHER_RESOURCE)
    with pytest.raises(Unauthenticated, match="other-api"):
        federated.authenticator.authenticate(token)
    with TestClient(make_app(federated), base_url=PUBLIC_URL) as api:
        response = api.get("/whoami", headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 401
        assert response.headers["content-type"] == "application/problem+json"
        assert "other-api" in response.json()["detail"]
        assert response.headers["www-authenticate"].startswith("Bearer")
