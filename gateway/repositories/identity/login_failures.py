"""Failed sign-in attempts, counted per key (an account, a user code, a client, an address)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from gateway.db.models import LoginFailure


def since(session: Session, keys: Iterable[str], after: datetime) -> list[tuple[str, datetime]]:
    """(key, time) of the failures of `keys` later than `after`, oldest first."""
    rows = session.execute(
        select(LoginFailure.key, LoginFailure.at)
        .where(LoginFailure.key.in_(tuple(keys)), LoginFailure.at > after)
        .order_by(LoginFailure.at)).all()
    return [(key, at) for key, at in rows]


def add(session: Session, keys: Iterable[str], at: datetime) -> None:
    """Record one failure at `at` for each key."""
    session.add_all([LoginFailure(key=key, at=at) for key in keys])


def purge_until(session: Session, until: datetime) -> None:
    """Delete the failures at or before `until` (past the window, they count for nothing)."""
    session.execute(delete(LoginFailure).where(LoginFailure.at <= until))


def clear(session: Session, key: str) -> None:
    """Delete every failure of `key`."""
    session.execute(delete(LoginFailure).where(LoginFailure.key == key))
