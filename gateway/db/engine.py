"""Engine and session factory. Nothing connects at import time."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker


def make_engine(url: str, **kwargs: Any) -> Engine:
    """An engine for `url`; SQLite gets WAL, a busy timeout and foreign keys."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": 30}, **kwargs
        )

        @event.listens_for(engine, "connect")
        def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
            # Let pysqlite leave transaction control to us so BEGIN IMMEDIATE works.
            dbapi_conn.isolation_level = None
            cursor = dbapi_conn.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        @event.listens_for(engine, "begin")
        def _sqlite_begin(conn: Any) -> None:
            # Take the write lock up front: two writers never deadlock upgrading
            # a shared lock, they queue on busy_timeout instead.
            conn.exec_driver_sql("BEGIN IMMEDIATE")

        return engine
    kwargs.setdefault("pool_size", 20)
    kwargs.setdefault("max_overflow", 20)
    # No pre-ping: it costs a round trip per checkout, and a connection broken by a
    # database restart is invalidated (with the whole pool) on its first error anyway.
    kwargs.setdefault("pool_recycle", 1800)
    return create_engine(url, **kwargs)


def is_postgres(engine: Engine) -> bool:
    return engine.dialect.name == "postgresql"


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(engine, expire_on_commit=False)


def make_reader_engine(engine: Engine) -> Engine:
    """An engine for requests that only read, one statement each: on PostgreSQL a pool
    of its own in autocommit (no BEGIN/ROLLBACK round trips, no per-checkout
    isolation switching); elsewhere the engine itself."""
    if not is_postgres(engine):
        return engine
    return make_engine(engine.url.render_as_string(hide_password=False),
                       isolation_level="AUTOCOMMIT")


@contextmanager
def savepoint(session: Session) -> Iterator[None]:
    """A step of the caller's unit of work that an error undoes alone (SAVEPOINT): the
    rest of the unit is kept, and it still commits at its boundary."""
    with session.begin_nested():
        yield


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit when the block ends without an error; an error in the
    block, or in the commit itself, rolls everything back."""
    with factory() as session:
        try:
            yield session
            session.commit()
        except BaseException:
            # Explicitly: SQLite keeps its transaction open after a refused COMMIT, and
            # the connection must not go back to the pool inside it.
            session.rollback()
            raise
