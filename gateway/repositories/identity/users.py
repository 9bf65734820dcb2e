"""Users of the gateway: identities (issuer, subject), local logins, service users."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.db.models import User


def add(session: Session, user: User) -> None:
    """Stage a new user for the unit of work."""
    session.add(user)


def get(session: Session, user_id: str) -> User | None:
    """The user with this gateway id."""
    return session.get(User, user_id)


def by_identity(session: Session, issuer: str, subject: str) -> User | None:
    """The user with this (issuer, subject) identity."""
    return session.scalar(select(User).where(User.issuer == issuer, User.subject == subject))


def by_username(session: Session, username: str, issuer: str) -> User | None:
    """The user of `issuer` who holds `username`."""
    return session.scalar(select(User).where(User.username == username, User.issuer == issuer))


def id_by_username(session: Session, username: str) -> str | None:
    """The id of the user holding `username` (usernames are unique across issuers)."""
    return session.scalar(select(User.id).where(User.username == username))


def disabled(session: Session, username: str) -> bool | None:
    """Whether the user holding `username` is disabled (None: nobody holds it)."""
    return session.scalar(select(User.disabled).where(User.username == username))


def disabled_usernames(session: Session) -> list[str]:
    """The usernames of every disabled user."""
    return [name for name in session.scalars(select(User.username).where(
        User.disabled.is_(True), User.username.is_not(None))) if name]
