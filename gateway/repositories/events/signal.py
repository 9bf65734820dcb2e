"""Wake-ups for event readers: a transaction that wrote events says so when it commits.

On PostgreSQL it also runs `NOTIFY gridgate_events`, which the database delivers at
commit (and drops on rollback) to every process that listens, whichever process wrote.
In this process, the callbacks given to `on_commit` run after the commit (SQLite has no
NOTIFY, and there the worker usually shares the API's process). A wake-up only says
"read the table now": readers still poll on a timer, so a missed one costs latency,
never an event.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable

from sqlalchemy import Engine, event, text
from sqlalchemy.orm import Session, SessionTransaction

log = logging.getLogger(__name__)

CHANNEL = "gridgate_events"
_ADDED = "gridgate.events.added"
_callbacks: list[Callable[[], None]] = []
_lock = threading.Lock()


def mark(session: Session) -> None:
    """Note that the session's transaction wrote events (called by the writers)."""
    session.info[_ADDED] = True


def on_commit(callback: Callable[[], None]) -> Callable[[], None]:
    """Call `callback` (quickly, from the committing thread) after each commit in this
    process that wrote events; returns the function that unregisters it."""
    with _lock:
        _callbacks.append(callback)

    def remove() -> None:
        with _lock:
            if callback in _callbacks:
                _callbacks.remove(callback)
    return remove


@event.listens_for(Session, "before_commit")
def _notify(session: Session) -> None:
    if session.info.get(_ADDED) and session.get_bind().dialect.name == "postgresql":
        session.connection().execute(text("SELECT pg_notify(:channel, '')"),
                                     {"channel": CHANNEL})


@event.listens_for(Session, "after_commit")
def _call_back(session: Session) -> None:
    if not session.info.pop(_ADDED, False):
        return
    with _lock:
        callbacks = list(_callbacks)
    for callback in callbacks:
        try:
            callback()
        except Exception:  # a reader's trouble must not fail the writer's commit
            log.exception("event wake-up callback failed")


@event.listens_for(Session, "after_transaction_end")
def _forget(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:  # a rollback of the whole transaction
        session.info.pop(_ADDED, None)


def listen(engine: Engine, callback: Callable[[], None], stop: threading.Event) -> None:
    """Until `stop` is set, LISTEN on PostgreSQL's channel and call `callback` for each
    notification, and once after every (re)connect: what was sent while no connection
    listened is not delivered, so readers must look."""
    while not stop.is_set():
        raw = None
        try:
            raw = engine.raw_connection()
            conn = raw.driver_connection
            if conn is None:
                raise RuntimeError("the pool gave no database connection")
            raw.detach()  # its own connection for as long as it listens, not the pool's
            conn.rollback()  # whatever the pool's checkout began
            conn.autocommit = True
            conn.execute(f"LISTEN {CHANNEL}")
            callback()
            while not stop.is_set():
                for _ in conn.notifies(timeout=1.0):
                    callback()
        except Exception as exc:  # the database away: listen again shortly
            log.warning("event listener: %r", exc)
            stop.wait(1.0)
        finally:
            if raw is not None:
                with contextlib.suppress(Exception):
                    raw.close()
