"""Commands that run on the gateway host: serve, worker, db upgrade.

They read `Settings()` (GRIDGATE_* variables) and import the server side lazily, so
the client commands start fast (only the settings class is imported up front).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Annotated, Any

import typer

from gateway.cli import render
from gateway.settings import Settings


def _settings(**overrides: Any) -> Settings:
    given = {k: v for k, v in overrides.items() if v is not None}
    settings = Settings(**given)
    if "public_url" not in settings.model_fields_set and ("host" in given or "port" in given):
        # Tokens' issuer and the login URL must name where we really listen.
        host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host  # noqa: S104
        settings = settings.model_copy(update={"public_url": f"http://{host}:{settings.port}"})
    return settings


def serve(
    host: Annotated[str | None, typer.Option(
        help="Address to listen on (default: $GRIDGATE_HOST or 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(
        help="Port to listen on (default: $GRIDGATE_PORT or 8642).")] = None,
    worker: Annotated[bool | None, typer.Option(
        "--worker/--no-worker", help="Run the job worker in this process "
        "(default: $GRIDGATE_RUN_WORKER or yes).")] = None,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Run the gateway (REST API, OAuth server and, by default, the worker)."""
    import uvicorn

    from gateway.api.app import create_app

    settings = _settings(host=host, port=port, run_worker=worker)
    app = create_app(settings)
    render.stderr_console().print(
        f"gridgate serving on http://{settings.host}:{settings.port} "
        f"(public URL {settings.public_url}, data in {settings.data_dir}, "
        f"worker {'on' if settings.run_worker else 'off'})")
    uvicorn.run(app, host=settings.host, port=settings.port, log_level=log_level,
                timeout_graceful_shutdown=10)


def worker() -> None:
    """Run the job worker alone (as many as you like against PostgreSQL)."""
    from gateway.worker.loop import run_worker

    settings = Settings()
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        render.stderr_console().print(f"received signal {signum}; stopping after this step")
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    render.stderr_console().print(f"gridgate worker running (data in {settings.data_dir})")
    run_worker(settings, stop)


def db_upgrade() -> None:
    """Create or migrate the database to the latest schema."""
    from sqlalchemy.engine import make_url

    from gateway.db.engine import make_engine
    from gateway.db.migrate import upgrade_database

    settings = Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    engine = make_engine(settings.resolved_database_url)
    try:
        upgrade_database(engine)
    finally:
        engine.dispose()
    shown = make_url(settings.resolved_database_url).render_as_string(hide_password=True)
    render.stderr_console().print(f"Database {shown} is up to date.")
