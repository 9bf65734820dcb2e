"""Access tokens of the built-in issuer revoked before their expiry, by `jti`."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from gateway.db.models import RevokedAccessToken


def add(session: Session, jti: str, expires_at: datetime) -> None:
    """Record `jti` as revoked (a second revocation, e.g. a double click, changes nothing)."""
    dialect = postgresql if session.get_bind().dialect.name == "postgresql" else sqlite
    session.execute(dialect.insert(RevokedAccessToken)
                    .values(jti=jti, expires_at=expires_at).on_conflict_do_nothing())


def is_revoked(session: Session, jti: str) -> bool:
    """Whether `jti` was revoked."""
    found = session.scalar(select(RevokedAccessToken.jti).where(RevokedAccessToken.jti == jti))
    return found is not None


def purge_expired_before(session: Session, until: datetime) -> None:
    """Forget the revocations of tokens that expired before `until`."""
    session.execute(delete(RevokedAccessToken).where(RevokedAccessToken.expires_at < until))
