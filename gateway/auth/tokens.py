"""Tokens the built-in issuer hands out: RS256 JWT access tokens, opaque refresh tokens.

Refresh tokens are random strings; only their sha256 is stored. Each use rotates the
token (the old one is revoked). Presenting an already revoked token is treated as theft
(RFC 9700 §4.14.2): every live refresh token of that user for that client is revoked.
Access tokens are not stored; one revoked before its expiry (a dashboard sign-out) is
remembered by its `jti` until it would have expired anyway.
"""

from __future__ import annotations

import hashlib
import secrets
import time
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session

from gateway.auth.keys import SigningKeys
from gateway.db.models import RefreshToken
from gateway.repositories.identity import refresh_tokens, revoked_access_tokens
from gateway.settings import Settings

ACCESS_TOKEN_TYP = "at+jwt"  # noqa: S105 (a media type, not a secret)


@dataclass(frozen=True)
class AccessToken:
    token: str
    expires_in: int
    jti: str


def hash_token(token: str) -> str:
    """The hex sha256 under which an opaque token is stored."""
    return hashlib.sha256(token.encode()).hexdigest()


def issue_access_token(
    settings: Settings,
    keys: SigningKeys,
    *,
    subject: str,
    client_id: str,
    scope: str,
    username: str | None = None,
    now: float | None = None,
) -> AccessToken:
    """Sign an RFC 9068 access token for `subject` (a gateway user id)."""
    issued = int(now if now is not None else time.time())
    ttl = settings.access_token_ttl_seconds
    jti = uuid.uuid4().hex
    claims: dict[str, object] = {
        "iss": settings.public_url,
        "aud": settings.audience,
        "sub": subject,
        "client_id": client_id,
        "scope": scope,
        "iat": issued,
        "nbf": issued,
        "exp": issued + ttl,
        "jti": jti,
    }
    if username:
        claims["username"] = username
    return AccessToken(keys.sign(claims, typ=ACCESS_TOKEN_TYP), ttl, jti)


def issue_refresh_token(
    session: Session, settings: Settings, *, user_id: str, client_id: str, scope: str
) -> str:
    """Create and store (hashed) a new refresh token; returns the plaintext once."""
    token = secrets.token_urlsafe(32)
    now = datetime.now(UTC)
    refresh_tokens.add(session, RefreshToken(
        token_hash=hash_token(token),
        client_id=client_id,
        user_id=user_id,
        scope=scope,
        issued_at=now,
        expires_at=now + timedelta(seconds=settings.refresh_token_ttl_seconds),
    ))
    session.flush()
    return token


def find_refresh_token(session: Session, token: str) -> RefreshToken | None:
    """The stored row for `token`, live or not."""
    return refresh_tokens.get(session, hash_token(token))


def is_usable(row: RefreshToken, now: datetime | None = None) -> bool:
    """Not revoked and not expired."""
    return row.revoked_at is None and row.expires_at > (now or datetime.now(UTC))


def revoke_refresh_token(session: Session, row: RefreshToken) -> None:
    """Revoke one refresh token (idempotent)."""
    if row.revoked_at is None:
        row.revoked_at = datetime.now(UTC)
        session.flush()


def consume_refresh_token(session: Session, row: RefreshToken) -> bool:
    """Revoke `row` atomically as it is used; False when another use got there first."""
    return refresh_tokens.consume(session, row.token_hash, datetime.now(UTC))


def revoke_refresh_family(session: Session, *, user_id: str, client_id: str) -> int:
    """Revoke every live refresh token of `user_id` at `client_id`; returns how many."""
    count = refresh_tokens.revoke_family(session, user_id, client_id, datetime.now(UTC))
    session.flush()
    return count


def live_refresh_tokens(session: Session, user_id: str) -> list[RefreshToken]:
    """A user's refresh tokens that can still be used."""
    return refresh_tokens.live(session, user_id, datetime.now(UTC))


def revoke_access_token(session: Session, jti: str, refused_after: datetime,
                        now: datetime) -> None:
    """Refuse the access token `jti` from `now` until `refused_after`, when its expiry
    refuses it anyway (the revocations of such tokens are dropped here)."""
    revoked_access_tokens.purge_expired_before(session, now)
    revoked_access_tokens.add(session, jti, refused_after)
    session.flush()


def access_token_revoked(session: Session, jti: str) -> bool:
    """Whether the access token `jti` was revoked."""
    return revoked_access_tokens.is_revoked(session, jti)
