"""Hand-made JWTs for the negative tests (the attacks are built byte by byte)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

from joserfc import jwt
from joserfc.jwk import ECKey, RSAKey


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64json(obj: Any) -> str:
    return b64(json.dumps(obj, separators=(",", ":")).encode())


def claims(iss: str, aud: str | list[str] = "gridgate", sub: str = "subject-1",
           lifetime: int = 600, **extra: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": iss, "aud": aud, "sub": sub, "iat": now, "nbf": now, "exp": now + lifetime,
            "jti": f"j{now}", "scope": "jobs:read jobs:write", **extra}


def sign(key: RSAKey | ECKey, payload: dict[str, Any], alg: str = "RS256",
         **header: Any) -> str:
    head = {"alg": alg, "typ": "at+jwt", **header}
    if key.kid and "kid" not in header:
        head["kid"] = key.kid
    head = {k: v for k, v in head.items() if v is not None}
    return jwt.encode(head, payload, key, algorithms=[alg])


def unsigned(payload: dict[str, Any], alg: str = "none") -> str:
    return f"{b64json({'alg': alg, 'typ': 'JWT'})}.{b64json(payload)}."


def hmac_signed(secret: bytes, payload: dict[str, Any], alg: str = "HS256",
                **header: Any) -> str:
    digest = {"HS256": hashlib.sha256, "HS384": hashlib.sha384, "HS512": hashlib.sha512}[alg]
    signing_input = f"{b64json({'alg': alg, 'typ': 'at+jwt', **header})}.{b64json(payload)}"
    sig = hmac.new(secret, signing_input.encode(), digest).digest()
    return f"{signing_input}.{b64(sig)}"


def rsa_key(kid: str) -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"kid": kid, "use": "sig", "alg": "RS256"})


def public_jwk(key: RSAKey | ECKey) -> dict[str, Any]:
    return dict(key.as_dict(private=False))
