"""Device authorizations (RFC 8628) of the built-in issuer, stored by the sha256 of the
device code; the user code is what a person types on the verification page."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from gateway.db.models import DeviceCode


def add(session: Session, code: DeviceCode) -> None:
    """Stage a new device authorization for the unit of work."""
    session.add(code)


def get(session: Session, device_code_hash: str) -> DeviceCode | None:
    """The authorization stored under `device_code_hash`."""
    return session.get(DeviceCode, device_code_hash)


def by_user_code(session: Session, user_code: str) -> DeviceCode | None:
    """The authorization a person's (normalized) user code names."""
    return session.scalar(select(DeviceCode).where(DeviceCode.user_code == user_code))


def user_code_taken(session: Session, user_code: str) -> bool:
    """Whether any stored authorization has `user_code`."""
    return session.scalar(select(DeviceCode.user_code).where(
        DeviceCode.user_code == user_code)) is not None


def purge_expired_before(session: Session, cutoff: datetime) -> None:
    """Delete the authorizations that expired before `cutoff`."""
    session.execute(delete(DeviceCode).where(DeviceCode.expires_at < cutoff))


def consume_approved(session: Session, device_code_hash: str) -> bool:
    """Mark an approved authorization used, atomically: of two concurrent token
    requests with one device code, exactly one gets True."""
    result = session.execute(
        update(DeviceCode)
        .where(DeviceCode.device_code_hash == device_code_hash,
               DeviceCode.status == "approved")
        .values(status="used")
        .execution_options(synchronize_session=False))
    return int(getattr(result, "rowcount", 0) or 0) == 1
