"""Refresh tokens of the built-in issuer, stored by the sha256 of their text."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from gateway.db.models import RefreshToken


def add(session: Session, token: RefreshToken) -> None:
    """Stage a new refresh token for the unit of work."""
    session.add(token)


def get(session: Session, token_hash: str) -> RefreshToken | None:
    """The token stored under `token_hash`, live or not."""
    return session.get(RefreshToken, token_hash)


def consume(session: Session, token_hash: str, at: datetime) -> bool:
    """Revoke the token if it is still live, atomically: of two concurrent callers with
    one token, exactly one gets True."""
    result = session.execute(
        update(RefreshToken)
        .where(RefreshToken.token_hash == token_hash, RefreshToken.revoked_at.is_(None))
        .values(revoked_at=at)
        .execution_options(synchronize_session=False))
    return int(getattr(result, "rowcount", 0) or 0) == 1


def revoke_family(session: Session, user_id: str, client_id: str, at: datetime) -> int:
    """Revoke every live token of `user_id` at `client_id`; how many there were."""
    result = session.execute(
        update(RefreshToken)
        .where(RefreshToken.user_id == user_id, RefreshToken.client_id == client_id,
               RefreshToken.revoked_at.is_(None))
        .values(revoked_at=at)
        .execution_options(synchronize_session="fetch"))
    return int(getattr(result, "rowcount", 0) or 0)


def live(session: Session, user_id: str, now: datetime) -> list[RefreshToken]:
    """The user's tokens neither revoked nor expired at `now`."""
    return list(session.scalars(
        select(RefreshToken).where(RefreshToken.user_id == user_id,
                                   RefreshToken.revoked_at.is_(None),
                                   RefreshToken.expires_at > now)))
