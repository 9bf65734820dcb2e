"""Access-token verification for the built-in issuer and for configured external issuers.

The rules (RFC 8725, RFC 9068):
- asymmetric signatures only; `none` and every HMAC algorithm are refused before any
  key is looked at, so a token "signed" with our public key as an HMAC secret never
  gets near a verifier;
- keys come only from our own key or the issuer's configured JWKS URL; the `jwk`,
  `jku`, `x5u` and `x5c` header parameters are never consulted;
- iss, aud, exp and nbf are always checked, with a small leeway for clock skew;
- `typ` may be `at+jwt` (RFC 9068), `JWT`, or absent.
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
from joserfc import jws
from joserfc.errors import (
    BadSignatureError,
    ExpiredTokenError,
    InvalidClaimError,
    JoseError,
    MissingClaimError,
)
from joserfc.jwk import JWKRegistry, Key
from joserfc.jwt import JWTClaimsRegistry

from gateway.auth.keys import SigningKeys
from gateway.domain.errors import Unauthenticated, Unavailable
from gateway.domain.principal import SCOPES
from gateway.settings import ExternalIssuer, Settings
from rules.text import EMAIL, EMAIL_MAX

log = logging.getLogger(__name__)

ASYMMETRIC_ALGORITHMS = frozenset({
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
    "ES256", "ES384", "ES512", "EdDSA", "Ed25519",
})
_KTY_FOR_ALG = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
_CURVES_FOR_ALG = {
    "ES256": ("P-256",), "ES384": ("P-384",), "ES512": ("P-521",),
    "EdDSA": ("Ed25519", "Ed448"), "Ed25519": ("Ed25519",),
}
_ACCEPTED_TYP = frozenset({"at+jwt", "application/at+jwt", "jwt", "application/jwt"})
# A bearer token bigger than this is not worth parsing.
MAX_TOKEN_BYTES = 16 * 1024
_LOGIN_HINT = "run 'gridgate login' again"


@dataclass(frozen=True)
class VerifiedToken:
    """A token whose signature and claims checked out."""

    issuer: str
    subject: str
    scopes: frozenset[str]
    expires_at: float
    builtin: bool
    client_id: str | None = None
    jti: str | None = None
    username: str | None = None
    display_name: str | None = None
    # The address the provider vouches for (`email` with `email_verified` true), if any.
    email: str | None = None
    claims: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


class _Registries:
    """One joserfc JWS registry per allowed algorithm (a registry pins the algorithm)."""

    def __init__(self) -> None:
        self._by_alg: dict[str, jws.JWSRegistry] = {}
        for alg in ASYMMETRIC_ALGORITHMS:
            # Unknown (non-critical) header parameters are ignored, as RFC 7515 asks;
            # they cannot influence which key verifies the token.
            registry = jws.JWSRegistry(algorithms=[alg], strict_check_header=False)
            # Room for a header carrying `jwk`/`x5c`: such a token must fail on its
            # signature (the header key is ignored), not on a size limit.
            registry.max_header_length = 8192
            self._by_alg[alg] = registry

    def __getitem__(self, alg: str) -> jws.JWSRegistry:
        return self._by_alg[alg]


_REGISTRIES = _Registries()


class JwksCache:
    """An issuer's JWKS, fetched on first use and re-fetched on an unknown `kid`
    at most once per `cooldown` seconds (so junk tokens cannot hammer the issuer)."""

    def __init__(
        self,
        url: str,
        http: httpx.Client,
        cooldown: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.url = url
        self._http = http
        self._cooldown = cooldown
        self._clock = clock
        self._keys: list[Key] = []
        self._fetched_at: float | None = None
        self._lock = threading.Lock()
        self.fetch_count = 0

    def keys_for(self, kid: str | None) -> list[Key]:
        """Signing keys that may have made a token with this `kid` (all, if None)."""
        found = self._match(kid)
        if found:
            return found
        with self._lock:
            found = self._match(kid)
            if found or not self._may_refresh():
                return found
            self._refresh()
            return self._match(kid)

    def _match(self, kid: str | None) -> list[Key]:
        if kid is None:
            return list(self._keys)
        return [k for k in self._keys if k.kid == kid]

    def _may_refresh(self) -> bool:
        if self._fetched_at is None:
            return True
        return self._clock() - self._fetched_at >= self._cooldown

    def _refresh(self) -> None:
        self._fetched_at = self._clock()
        self.fetch_count += 1
        try:
            response = self._http.get(self.url, headers={"Accept": "application/json"})
            response.raise_for_status()
            document = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            log.warning("fetching JWKS %s failed: %s", self.url, exc)
            if not self._keys:
                raise Unavailable(
                    f"The gateway could not fetch the signing keys of the token issuer "
                    f"({self.url}); try again shortly."
                ) from exc
            return
        self._keys = _signing_keys(document)
        log.info("loaded %d signing keys from %s", len(self._keys), self.url)


def _signing_keys(document: Any) -> list[Key]:
    """The usable public signing keys of a JWKS document; anything else is skipped."""
    raw = document.get("keys") if isinstance(document, dict) else None
    keys: list[Key] = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict) or item.get("use", "sig") != "sig":
            continue
        if item.get("kty") not in ("RSA", "EC", "OKP"):
            continue  # never a symmetric ("oct") key from a published set
        public = {k: v for k, v in item.items() if k not in ("d", "p", "q", "dp", "dq", "qi")}
        try:
            keys.append(JWKRegistry.import_key(public))
        except (JoseError, ValueError, TypeError) as exc:
            log.warning("skipping a JWKS key that does not import: %s", exc)
    return keys


class TokenVerifier:
    """Verifies bearer tokens from the built-in issuer and the configured external ones."""

    def __init__(
        self,
        settings: Settings,
        keys: SigningKeys,
        *,
        http: httpx.Client | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._keys = keys
        self._clock = clock
        self._owns_http = http is None
        self._http = http or httpx.Client(timeout=httpx.Timeout(5.0), follow_redirects=False)
        self._external: dict[str, ExternalIssuer] = {
            cfg.issuer: cfg for cfg in settings.external_issuers
        }
        self._jwks: dict[str, JwksCache] = {
            cfg.issuer: JwksCache(cfg.jwks_url, self._http,
                                  settings.jwks_refresh_cooldown_seconds)
            for cfg in settings.external_issuers
        }

    def close(self) -> None:
        """Close the HTTP client used for JWKS fetches (if this verifier made it)."""
        if self._owns_http:
            self._http.close()

    def jwks_cache(self, issuer: str) -> JwksCache:
        """The JWKS cache of a configured external issuer."""
        return self._jwks[issuer]

    def verify(self, token: str) -> VerifiedToken:
        """Check `token` completely; raise `Unauthenticated` saying what is wrong."""
        header, unverified = _split(token)
        alg = header.get("alg")
        if alg not in ASYMMETRIC_ALGORITHMS:
            raise Unauthenticated(
                f"The access token is signed with algorithm {alg!r}; only asymmetric "
                f"signatures ({', '.join(sorted(ASYMMETRIC_ALGORITHMS))}) are accepted."
            )
        assert isinstance(alg, str)
        typ = header.get("typ")
        if typ is not None and (not isinstance(typ, str) or typ.lower() not in _ACCEPTED_TYP):
            raise Unauthenticated(f"The token has type {typ!r}; an access token (at+jwt) "
                                  "is needed here.")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise Unauthenticated("The access token's 'kid' header is not a string.")

        iss = unverified.get("iss")
        if iss == self._settings.public_url:
            candidates: list[Key] = (
                [self._keys.public_key] if kid in (None, self._keys.kid) else [])
            audience = self._settings.audience
            builtin = True
        elif isinstance(iss, str) and iss in self._external:
            candidates = self._jwks[iss].keys_for(kid)
            audience = self._external[iss].audience
            builtin = False
        else:
            raise Unauthenticated(f"Tokens from issuer {iss!r} are not accepted by this gateway.")

        candidates = [k for k in candidates if _fits(k, alg)]
        if not candidates:
            hint = f"; {_LOGIN_HINT}" if builtin else ""
            raise Unauthenticated(
                f"The access token was signed with a key that issuer {iss} does not publish "
                f"(kid {kid!r}){hint}."
            )
        claims = self._verified_claims(token, alg, candidates)
        self._check_claims(claims, iss, audience, builtin)
        return self._result(claims, iss, builtin)

    def _verified_claims(self, token: str, alg: str, keys: list[Key]) -> dict[str, Any]:
        for key in keys:
            try:
                obj = jws.deserialize_compact(token, key, registry=_REGISTRIES[alg])
            except BadSignatureError:
                continue
            except JoseError as exc:
                raise Unauthenticated(f"The access token is malformed: {exc.description or exc}."
                                      ) from exc
            payload = json.loads(obj.payload or b"null")
            if not isinstance(payload, dict):
                raise Unauthenticated("The access token's payload is not a JSON object.")
            return payload
        raise Unauthenticated("The access token's signature does not verify.")

    def _check_claims(self, claims: dict[str, Any], iss: str, aud: str, builtin: bool) -> None:
        registry = JWTClaimsRegistry(
            now=lambda: int(self._clock()),
            leeway=self._settings.token_leeway_seconds,
            iss={"essential": True, "value": iss},
            aud={"essential": True, "value": aud},
            sub={"essential": True},
            exp={"essential": True},
        )
        try:
            registry.validate(claims)
        except ExpiredTokenError as exc:
            hint = _LOGIN_HINT if builtin else f"get a new one from {iss}"
            raise Unauthenticated(f"The access token has expired; {hint}.") from exc
        except MissingClaimError as exc:
            raise Unauthenticated(f"The access token lacks required claims: {exc.claim}.") from exc
        except InvalidClaimError as exc:
            if exc.claim == "aud":
                raise Unauthenticated(
                    f"The access token is meant for {claims.get('aud')!r}, not for this "
                    f"gateway ({aud!r})."
                ) from exc
            if exc.claim == "nbf":
                raise Unauthenticated("The access token is not valid yet (nbf is in the "
                                      "future); check the clocks.") from exc
            raise Unauthenticated(
                f"The access token's '{exc.claim}' claim is invalid: {exc.description}."
            ) from exc

    def _result(self, claims: dict[str, Any], iss: str, builtin: bool) -> VerifiedToken:
        scopes = scopes_of(claims)
        if not builtin and not scopes & set(SCOPES):
            scopes |= frozenset(self._external[iss].default_scopes)
        username = claims.get("username") if builtin else claims.get("preferred_username")
        name = claims.get("name")
        client_id = claims.get("client_id", claims.get("azp"))
        jti = claims.get("jti")
        return VerifiedToken(
            issuer=iss,
            subject=str(claims["sub"]),
            scopes=scopes,
            expires_at=float(claims["exp"]),
            builtin=builtin,
            client_id=client_id if isinstance(client_id, str) else None,
            jti=jti if isinstance(jti, str) else None,
            username=username if isinstance(username, str) else None,
            display_name=name if isinstance(name, str) else None,
            email=None if builtin else verified_email(claims),
            claims=claims,
        )


def verified_email(claims: dict[str, Any]) -> str | None:
    """The `email` claim when `email_verified` is true and it is one plain address."""
    email = claims.get("email")
    if claims.get("email_verified") is not True or not isinstance(email, str):
        return None
    return email if len(email) <= EMAIL_MAX and EMAIL.matches(email) else None


def scopes_of(claims: dict[str, Any]) -> frozenset[str]:
    """Scopes from `scope` (space-separated string) and/or `scp` (list or string)."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(v for v in value if isinstance(v, str))
    return frozenset(found)


def _fits(key: Key, alg: str) -> bool:
    """Whether `key` is of the right type (and, if it says so, algorithm) for `alg`."""
    if key.key_type != _KTY_FOR_ALG.get(alg[:2]):
        return False
    curves = _CURVES_FOR_ALG.get(alg)
    if curves is not None and key.get("crv") not in curves:
        return False
    return key.alg in (None, alg)


def _b64json(segment: str) -> Any:
    padded = segment + "=" * (-len(segment) % 4)
    return json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))


def _split(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Header and (unverified) payload of a compact JWS, or Unauthenticated."""
    if len(token) > MAX_TOKEN_BYTES:
        raise Unauthenticated("The access token is too large.")
    parts = token.split(".")
    if len(parts) != 3:
        raise Unauthenticated("The access token is not a JWT (expected three dot-separated "
                              "parts).")
    try:
        header = _b64json(parts[0])
        payload = _b64json(parts[1])
    except (ValueError, UnicodeError, binascii.Error) as exc:
        raise Unauthenticated("The access token is not a well-formed JWT.") from exc
    if not isinstance(header, dict) or not isinstance(payload, dict):
        raise Unauthenticated("The access token is not a well-formed JWT.")
    return header, payload
