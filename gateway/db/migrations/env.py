"""Alembic environment: the engine (or connection) comes from the caller, never a URL file."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection

from gateway.db import models  # noqa: F401  (registers every table on Base.metadata)
from gateway.db.base import Base

config = context.config


def _run(connection: Connection) -> None:
    if connection.dialect.name != "sqlite":
        _migrate(connection)
        return
    # SQLite alters a table by copying it and dropping the old one, which with foreign
    # keys on deletes through every reference to it: SQLite's own procedure for schema
    # changes is to switch them off (outside a transaction: pysqlite begins none for a
    # PRAGMA), change, check, and switch them on again. On the driver's connection: the
    # engine's own begin (BEGIN IMMEDIATE) would make the PRAGMA a no-op.
    raw = connection.connection.driver_connection
    assert raw is not None and not connection.in_transaction()
    raw.execute("PRAGMA foreign_keys=OFF")
    try:
        _migrate(connection)
        broken = connection.exec_driver_sql("PRAGMA foreign_key_check").all()
        if broken:
            raise RuntimeError(f"a migration broke foreign keys: {broken[:5]}")
    finally:
        connection.commit()
        raw.execute("PRAGMA foreign_keys=ON")


def _migrate(connection: Connection) -> None:
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
