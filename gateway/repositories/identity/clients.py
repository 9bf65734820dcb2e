"""OAuth clients registered with the built-in authorization server."""

from __future__ import annotations

from sqlalchemy.orm import Session

from gateway.db.models import OAuthClient


def get(session: Session, client_id: str) -> OAuthClient | None:
    """The client registered as `client_id`."""
    return session.get(OAuthClient, client_id)


def add(session: Session, client: OAuthClient) -> None:
    """Stage a new client for the unit of work."""
    session.add(client)
