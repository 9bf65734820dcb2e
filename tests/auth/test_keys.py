"""The built-in issuer's signing key: 0600 from birth, stable kid, public-only JWKS."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from pathlib import Path

from joserfc import jwt
from joserfc.jwk import RSAKey

from gateway.auth.keys import SigningKeys


def _rfc7638_thumbprint(jwk: dict[str, str]) -> str:
    # RFC 7638 §3: required members only, lexicographic order, no whitespace.
    canonical = json.dumps({k: jwk[k] for k in ("e", "kty", "n")}, separators=(",", ":"),
                           sort_keys=True)
    digest = hashlib.sha256(canonical.encode()).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def test_key_file_is_created_0600_even_with_a_permissive_umask(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "signing-key.pem"
    old = os.umask(0)
    try:
        SigningKeys.load_or_create(path)
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    # No temporary file is left beside it.
    assert [p.name for p in path.parent.iterdir()] == ["signing-key.pem"]


def test_kid_is_the_rfc7638_thumbprint_and_stable_across_loads(tmp_path: Path) -> None:
    path = tmp_path / "k.pem"
    first = SigningKeys.load_or_create(path)
    again = SigningKeys.load_or_create(path)
    assert first.kid == again.kid
    (jwk,) = first.jwks()["keys"]
    assert first.kid == _rfc7638_thumbprint(jwk)
    other = SigningKeys.load_or_create(tmp_path / "other.pem")
    assert other.kid != first.kid


def test_jwks_is_public_only(tmp_path: Path) -> None:
    keys = SigningKeys.load_or_create(tmp_path / "k.pem")
    (jwk,) = keys.jwks()["keys"]
    assert jwk["kty"] == "RSA" and jwk["alg"] == "RS256" and jwk["use"] == "sig"
    assert not {"d", "p", "q", "dp", "dq", "qi"} & set(jwk)


def test_sign_produces_an_rs256_at_jwt_verifiable_with_the_published_key(
        tmp_path: Path) -> None:
    keys = SigningKeys.load_or_create(tmp_path / "k.pem")
    token = keys.sign({"sub": "someone", "scope": "jobs:read"})
    public = RSAKey.import_key(keys.jwks()["keys"][0])
    decoded = jwt.decode(token, public, algorithms=["RS256"])
    assert decoded.header == {"alg": "RS256", "kid": keys.kid, "typ": "at+jwt"}
    assert decoded.claims == {"sub": "someone", "scope": "jobs:read"}
    assert jwt.decode(keys.sign({"a": 1}, typ="JWT"), public).header["typ"] == "JWT"
