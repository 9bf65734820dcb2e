"""Whether this server process has begun to stop: long-lived responses (followed output)
then end on their own, cleanly, instead of being cancelled when the grace period runs out
(which uvicorn logs as a CancelledError traceback per stream)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from starlette.applications import Starlette

log = logging.getLogger(__name__)


def mark_stopping(app: Starlette) -> None:
    """Called by the server (gateway.serving.GatewayServer) as its shutdown begins."""
    app.state.stopping = True
    log.info("shutting down: open output and event streams end at their next poll")
    for wake in getattr(app.state, "stopping_wakes", ()):
        wake()


def on_stopping(app: Starlette, wake: Callable[[], None]) -> None:
    """Have `mark_stopping` call `wake` (on the event loop): for streams that sleep
    until something happens rather than polling."""
    app.state.stopping_wakes = [*getattr(app.state, "stopping_wakes", ()), wake]


def is_stopping(app: Starlette) -> bool:
    return bool(getattr(app.state, "stopping", False))
