"""The throw-away PostgreSQL server of tests/pg.py starts, serves, and goes away."""

from __future__ import annotations

import os
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from tests.pg import start_postgres


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_start_query_create_database_and_stop(tmp_path: Path) -> None:
    server = start_postgres(tmp_path)
    try:
        url = make_url(server.url)
        assert url.drivername == "postgresql+psycopg"
        assert url.host == "127.0.0.1"
        assert server.port == url.port

        engine = create_engine(server.url)
        try:
            with engine.connect() as conn:
                version = conn.execute(text("SELECT version()")).scalar_one()
                rows = conn.execute(
                    text(
                        "SELECT name, setting FROM pg_settings WHERE name IN "
                        "('fsync', 'max_connections', 'listen_addresses')"
                    )
                )
                settings = {name: setting for name, setting in rows}
        finally:
            engine.dispose()
        assert version.startswith("PostgreSQL ")
        assert settings == {
            "fsync": "off",
            "max_connections": "300",
            "listen_addresses": "127.0.0.1",
        }

        db_url = server.create_database("fixture_check")
        engine = create_engine(db_url)
        try:
            with engine.begin() as conn:
                conn.execute(text("CREATE TABLE t (x int)"))
                conn.execute(text("INSERT INTO t VALUES (42)"))
            with engine.connect() as conn:
                assert conn.execute(text("SELECT current_database()")).scalar_one() == (
                    "fixture_check"
                )
                assert conn.execute(text("SELECT x FROM t")).scalar_one() == 42
        finally:
            engine.dispose()

        with pytest.raises(psycopg.errors.DuplicateDatabase):
            server.create_database("fixture_check")
        assert _alive(server.pid)
    finally:
        server.stop()

    assert not _alive(server.pid)
    assert not server.root.exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(server.conninfo(), connect_timeout=2)
    server.stop()  # idempotent


def test_servers_are_independent(tmp_path: Path) -> None:
    first = start_postgres(tmp_path)
    try:
        second = start_postgres(tmp_path)
        try:
            assert first.port != second.port
            first.create_database("only_in_first")
            with psycopg.connect(second.conninfo(), autocommit=True) as conn:
                names = {
                    row[0] for row in conn.execute("SELECT datname FROM pg_database").fetchall()
                }
            assert "only_in_first" not in names
            assert "gridgate_test" in names
        finally:
            second.stop()
        assert _alive(first.pid)
    finally:
        first.stop()
