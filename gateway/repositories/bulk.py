"""Many rows at once. On PostgreSQL through `COPY ... FROM STDIN` on the unit of work's
own connection (same transaction): no statement per row to build, send or parse.
Elsewhere an executemany."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, Table, insert, text


def insert_rows(conn: Connection, table: Table, rows: Sequence[dict[str, Any]]) -> None:
    """Insert `rows` (dicts with the same keys) into `table`."""
    if not rows:
        return
    if conn.dialect.name != "postgresql":
        conn.execute(insert(table), list(rows))
        return
    columns = list(rows[0])
    # Names come from the table's own columns, never from user text.
    names = ", ".join(table.c[c].name for c in columns)
    driver = conn.connection.driver_connection
    assert driver is not None
    with driver.cursor() as cursor, cursor.copy(
            f"COPY {table.name} ({names}) FROM STDIN") as copy:
        for row in rows:
            copy.write_row(tuple(row[c] for c in columns))


def reserve_ids(conn: Connection, table: Table, count: int) -> list[int]:
    """`count` new primary keys of `table` (its `id`), to insert rows with later in this
    unit of work. PostgreSQL draws them from the column's sequence; SQLite, whose
    writers are serialised (BEGIN IMMEDIATE), continues after the largest id."""
    if count <= 0:
        return []
    if conn.dialect.name == "postgresql":
        return list(conn.scalars(text(
            f"SELECT nextval(pg_get_serial_sequence('{table.name}', 'id')) "  # noqa: S608
            "FROM generate_series(1, :n)"), {"n": count}))
    top = conn.scalar(text(f"SELECT coalesce(max(id), 0) FROM {table.name}")) or 0  # noqa: S608
    return list(range(top + 1, top + 1 + count))
