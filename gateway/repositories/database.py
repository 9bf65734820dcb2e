"""The database as a whole: the readiness probe behind /health."""

from __future__ import annotations

from sqlalchemy import Connection, text

_PING = text("SELECT 1")


def ping(conn: Connection) -> None:
    """One round trip to the database; raises whatever the driver raises when it fails."""
    conn.execute(_PING)
