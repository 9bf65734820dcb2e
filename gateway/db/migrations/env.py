"""Alembic environment: the engine (or connection) comes from the caller, never a URL file."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from gateway.db import models  # noqa: F401  (registers every table on Base.metadata)
from gateway.db.base import Base

config = context.config


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    with config.attributes["engine"].connect() as conn:
        _run(conn)
        conn.commit()
