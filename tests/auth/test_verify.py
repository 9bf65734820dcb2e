"""Access-token verification: every way a token can be wrong is refused, with a reason.

Built-in issuer tokens are checked against our key; external issuers' against the JWKS
that a real local HTTP server publishes (so fetching, caching and refresh are real).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from joserfc.jwk import ECKey

from gateway.auth.keys import SigningKeys
from gateway.auth.tokens import issue_access_token
from gateway.auth.verify import TokenVerifier
from gateway.domain.errors import Unauthenticated
from gateway.settings import Settings
from tests.auth.conftest import PUBLIC_URL, external
from tests.auth.jwks_server import JwksServer, serve_jwks
from tests.auth.tokens_util import (
    b64json,
    claims,
    hmac_signed,
    public_jwk,
    rsa_key,
    sign,
    unsigned,
)

EXT = "https://idp.example.org/realms/hpc"


@pytest.fixture(scope="module")
def keys() -> SigningKeys:
    return SigningKeys.generate()


@pytest.fixture(scope="module")
def idp_key():  # type: ignore[no-untyped-def]
    return rsa_key("idp-1")


@pytest.fixture
def idp(idp_key) -> Iterator[JwksServer]:  # type: ignore[no-untyped-def]
    with serve_jwks({"keys": [public_jwk(idp_key)]}) as server:
        yield server


def make_verifier(keys: SigningKeys, idp: JwksServer, cooldown: float = 3600,
                  default_scopes: list[str] | None = None) -> TokenVerifier:
    settings = Settings(public_url=PUBLIC_URL, jwks_refresh_cooldown_seconds=cooldown,
                        token_leeway_seconds=30,
                        external_issuers=[external(EXT, idp.url,
                                                   default_scopes=default_scopes)])
    return TokenVerifier(settings, keys)


@pytest.fixture
def verifier(keys: SigningKeys, idp: JwksServer) -> TokenVerifier:
    return make_verifier(keys, idp)


def refused(verifier: TokenVerifier, token: str, *fragments: str) -> str:
    with pytest.raises(Unauthenticated) as caught:
        verifier.verify(token)
    message = caught.value.detail
    for fragment in fragments:
        assert fragment in message, message
    return message


# ---------------------------------------------------------------- the built-in issuer


def test_builtin_token_is_accepted(keys: SigningKeys, verifier: TokenVerifier) -> None:
    token = issue_access_token(Settings(public_url=PUBLIC_URL), keys, subject="user-1",
                               client_id="gridgate-cli", scope="jobs:read sites:read",
                               username="alice").token
    verified = verifier.verify(token)
    assert verified.builtin and verified.issuer == PUBLIC_URL
    assert verified.subject == "user-1" and verified.username == "alice"
    assert verified.scopes == {"jobs:read", "sites:read"}
    assert verified.client_id == "gridgate-cli"


def test_alg_none_is_refused(verifier: TokenVerifier) -> None:
    refused(verifier, unsigned(claims(PUBLIC_URL)), "'none'", "asymmetric")
    # Capitalisation games do not help either.
    refused(verifier, unsigned(claims(PUBLIC_URL), alg="None"), "asymmetric")


@pytest.mark.parametrize("alg", ["HS256", "HS384", "HS512"])
def test_hmac_signed_with_our_public_key_is_refused(
        keys: SigningKeys, verifier: TokenVerifier, alg: str) -> None:
    pem = keys.public_key.as_pem()
    jwk_json = json.dumps(keys.jwks()["keys"][0]).encode()
    for secret in (pem, jwk_json):
        token = hmac_signed(secret, claims(PUBLIC_URL), alg=alg, kid=keys.kid)
        refused(verifier, token, repr(alg), "asymmetric")


def test_wrong_audience_is_refused(keys: SigningKeys, verifier: TokenVerifier) -> None:
    refused(verifier, keys.sign(claims(PUBLIC_URL, aud="another-api")),
            "meant for", "another-api")
    refused(verifier, keys.sign(claims(PUBLIC_URL, aud=["a", "b"])), "meant for")
    # A list that contains our audience is fine (RFC 7519 §4.1.3).
    assert verifier.verify(keys.sign(claims(PUBLIC_URL, aud=["x", "gridgate"])))


def test_missing_audience_is_refused(keys: SigningKeys, verifier: TokenVerifier) -> None:
    payload = claims(PUBLIC_URL)
    del payload["aud"]
    refused(verifier, keys.sign(payload), "aud")


def test_wrong_issuer_is_refused(keys: SigningKeys, verifier: TokenVerifier) -> None:
    refused(verifier, keys.sign(claims("https://evil.example")), "not accepted",
            "evil.example")
    # Our key and our audience, but claiming to be the external IdP: its JWKS decides.
    refused(verifier, keys.sign(claims(EXT)), "does not publish")


def test_expired_is_refused_with_a_hint(keys: SigningKeys, verifier: TokenVerifier) -> None:
    refused(verifier, keys.sign(claims(PUBLIC_URL, lifetime=-120)), "expired",
            "gridgate login")


def test_leeway_covers_small_clock_skew(keys: SigningKeys, verifier: TokenVerifier) -> None:
    assert verifier.verify(keys.sign(claims(PUBLIC_URL, lifetime=-5)))
    payload = claims(PUBLIC_URL)
    payload["nbf"] += 10
    assert verifier.verify(keys.sign(payload))


def test_not_yet_valid_is_refused(keys: SigningKeys, verifier: TokenVerifier) -> None:
    payload = claims(PUBLIC_URL)
    payload["nbf"] += 600
    refused(verifier, keys.sign(payload), "not valid yet")


def test_missing_exp_or_sub_is_refused(keys: SigningKeys, verifier: TokenVerifier) -> None:
    for name in ("exp", "sub"):
        payload = claims(PUBLIC_URL)
        del payload[name]
        refused(verifier, keys.sign(payload), name)


def test_unknown_kid_is_refused(keys: SigningKeys, verifier: TokenVerifier) -> None:
    stranger = rsa_key("someone-else")
    refused(verifier, sign(stranger, claims(PUBLIC_URL)), "does not publish",
            "someone-else")
    # Our kid, another key: the signature gives it away.
    refused(verifier, sign(stranger, claims(PUBLIC_URL), kid=keys.kid), "signature")


def test_tampered_signature_or_payload_is_refused(
        keys: SigningKeys, verifier: TokenVerifier) -> None:
    token = keys.sign(claims(PUBLIC_URL, scope="jobs:read"))
    head, body, sig = token.split(".")
    flipped = sig[:10] + ("A" if sig[10] != "A" else "B") + sig[11:]
    refused(verifier, f"{head}.{body}.{flipped}", "signature")
    forged_body = b64json(claims(PUBLIC_URL, scope="jobs:read jobs:write admin"))
    refused(verifier, f"{head}.{forged_body}.{sig}", "signature")
    refused(verifier, f"{head}.{body}.", "signature")


def test_header_keys_are_ignored(keys: SigningKeys, idp: JwksServer,
                                 verifier: TokenVerifier) -> None:
    attacker = rsa_key("attacker")
    with serve_jwks({"keys": [public_jwk(attacker)]}) as evil:
        for header in ({"jwk": public_jwk(attacker)}, {"jku": evil.url},
                       {"x5u": evil.url + "/cert.pem"},
                       {"jwk": public_jwk(attacker), "jku": evil.url, "kid": None}):
            for iss in (PUBLIC_URL, EXT):
                refused(verifier, sign(attacker, claims(iss), **header))
        # A genuine token that merely carries a jku still verifies against our key only.
        genuine = sign(_private(keys), claims(PUBLIC_URL), jku=evil.url)
        assert verifier.verify(genuine).subject == "subject-1"
        assert evil.hits == 0


def _private(keys: SigningKeys):  # type: ignore[no-untyped-def]
    return keys._private


def test_token_type_must_be_an_access_token(keys: SigningKeys, verifier: TokenVerifier) -> None:
    for typ in ("at+jwt", "application/at+jwt", "JWT", None):
        assert verifier.verify(keys.sign(claims(PUBLIC_URL), typ=typ) if typ else
                               sign(_private(keys), claims(PUBLIC_URL), typ=None))
    refused(verifier, keys.sign(claims(PUBLIC_URL), typ="dpop+jwt"), "dpop+jwt")


@pytest.mark.parametrize("junk", ["", "abc", "a.b", "a.b.c", "....", "x" * 20000])
def test_junk_is_refused(verifier: TokenVerifier, junk: str) -> None:
    refused(verifier, junk)


# ---------------------------------------------------------------- external issuers


def test_external_token_is_accepted_with_scp_list(idp_key, verifier: TokenVerifier,  # type: ignore[no-untyped-def]
                                                  idp: JwksServer) -> None:
    payload = claims(EXT, sub="ext-user", preferred_username="erin")
    del payload["scope"]
    payload["scp"] = ["jobs:read", "jobs:write"]
    verified = verifier.verify(sign(idp_key, payload))
    assert not verified.builtin and verified.issuer == EXT and verified.subject == "ext-user"
    assert verified.scopes == {"jobs:read", "jobs:write"} and verified.username == "erin"
    # The JWKS is cached: more tokens, no more fetches.
    verifier.verify(sign(idp_key, claims(EXT)))
    assert idp.hits == 1


def test_external_default_scopes_apply_only_without_ours(
        keys: SigningKeys, idp_key, idp: JwksServer) -> None:  # type: ignore[no-untyped-def]
    verifier = make_verifier(keys, idp, default_scopes=["jobs:read"])
    bare = verifier.verify(sign(idp_key, claims(EXT, scope="openid profile")))
    assert bare.scopes == {"openid", "profile", "jobs:read"}
    own = verifier.verify(sign(idp_key, claims(EXT, scope="jobs:write")))
    assert own.scopes == {"jobs:write"}


def test_external_wrong_audience_and_expiry(idp_key, verifier: TokenVerifier) -> None:  # type: ignore[no-untyped-def]
    refused(verifier, sign(idp_key, claims(EXT, aud="other-api")), "meant for")
    refused(verifier, sign(idp_key, claims(EXT, lifetime=-300)), "expired", EXT)


def test_external_hmac_with_the_idps_public_key_is_refused(
        idp_key, verifier: TokenVerifier) -> None:  # type: ignore[no-untyped-def]
    for secret in (idp_key.as_pem(private=False), json.dumps(public_jwk(idp_key)).encode()):
        refused(verifier, hmac_signed(secret, claims(EXT), kid="idp-1"), "asymmetric")


def test_symmetric_keys_in_a_jwks_are_never_used(keys: SigningKeys) -> None:
    with serve_jwks({"keys": [{"kty": "oct", "k": "c2VjcmV0", "kid": "shared"}]}) as idp:
        verifier = make_verifier(keys, idp)
        refused(verifier, hmac_signed(b"secret", claims(EXT), kid="shared"), "asymmetric")
        other = rsa_key("shared")
        refused(verifier, sign(other, claims(EXT)), "does not publish")


def test_unknown_kid_refreshes_once_then_waits_for_the_cooldown(
        keys: SigningKeys, idp_key, idp: JwksServer) -> None:  # type: ignore[no-untyped-def]
    verifier = make_verifier(keys, idp, cooldown=3600)
    verifier.verify(sign(idp_key, claims(EXT)))
    assert idp.hits == 1
    rotated = rsa_key("idp-2")
    idp.jwks = {"keys": [public_jwk(idp_key), public_jwk(rotated)]}
    # The last fetch is too recent: an unknown kid does not make us fetch again.
    refused(verifier, sign(rotated, claims(EXT)), "does not publish", "idp-2")
    refused(verifier, sign(rsa_key("junk"), claims(EXT)), "does not publish")
    assert idp.hits == 1


def test_unknown_kid_picks_up_a_rotated_key(
        keys: SigningKeys, idp_key, idp: JwksServer) -> None:  # type: ignore[no-untyped-def]
    verifier = make_verifier(keys, idp, cooldown=0)
    verifier.verify(sign(idp_key, claims(EXT)))
    rotated = rsa_key("idp-2")
    idp.jwks = {"keys": [public_jwk(rotated)]}
    assert verifier.verify(sign(rotated, claims(EXT))).issuer == EXT
    assert idp.hits == 2
    # A known kid never causes a fetch.
    verifier.verify(sign(rotated, claims(EXT)))
    assert idp.hits == 2


def test_ec_and_other_asymmetric_algorithms_are_accepted(keys: SigningKeys) -> None:
    ec = ECKey.generate_key("P-256", parameters={"kid": "ec-1"})
    with serve_jwks({"keys": [public_jwk(ec)]}) as idp:
        verifier = make_verifier(keys, idp)
        assert verifier.verify(sign(ec, claims(EXT), alg="ES256")).issuer == EXT
        # The same key cannot stand in for another curve's algorithm.
        _, body, sig = sign(ec, claims(EXT), alg="ES256").split(".")
        relabelled = b64json({"alg": "ES384", "kid": "ec-1", "typ": "at+jwt"})
        refused(verifier, f"{relabelled}.{body}.{sig}", "does not publish")


def test_unreachable_jwks_is_unavailable_not_a_crash(keys: SigningKeys, idp_key) -> None:  # type: ignore[no-untyped-def]
    from gateway.domain.errors import Unavailable

    with serve_jwks() as gone:
        url = gone.url
    settings = Settings(public_url=PUBLIC_URL,
                        external_issuers=[external(EXT, url)])
    with pytest.raises(Unavailable):
        TokenVerifier(settings, keys).verify(sign(idp_key, claims(EXT)))
