"""Commands that run on the gateway host: serve, worker, db upgrade.

They read `Settings()` (GRIDGATE_* variables) and import the server side, settings
included, inside each command, so the client commands start fast.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gateway.cli import render

if TYPE_CHECKING:
    from gateway.settings import Settings


def _settings(**overrides: Any) -> Settings:
    from gateway.settings import Settings

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
    workers: Annotated[int, typer.Option(
        "--processes", min=1, help="Server processes sharing the port; each also runs a "
        "job worker unless --no-worker (safe: workers never submit a job twice).")] = 1,
    log_level: Annotated[str, typer.Option(help="uvicorn log level.")] = "info",
) -> None:
    """Run the gateway (REST API, OAuth server and, by default, the worker)."""
    import uvicorn

    from gateway.runtime import build_runtime
    from gateway.serving import GatewayServer, serving_app

    settings = _settings(host=host, port=port, run_worker=worker)
    render.stderr_console().print(
        f"gridgate serving on http://{settings.host}:{settings.port} "
        f"(public URL {settings.public_url}, data in {settings.data_dir}, "
        f"worker {'on' if settings.run_worker else 'off'}, {workers} process(es))")
    if workers == 1:
        app = serving_app(settings)
        server = GatewayServer(uvicorn.Config(app, host=settings.host, port=settings.port,
                                              log_level=log_level,
                                              timeout_graceful_shutdown=10), app)
        if settings.reuse_port:
            server.run(sockets=[_reuse_port_socket(settings.host, settings.port)])
        else:
            server.run()
        return
    # Migrate, create the signing key and register sites once, before the children
    # start. Each child binds its own SO_REUSEPORT socket, so the kernel spreads
    # connections evenly (one shared socket lets the busiest process take them all).
    build_runtime(settings).close()
    env = {**os.environ, "GRIDGATE_HOST": settings.host, "GRIDGATE_PORT": str(settings.port),
           "GRIDGATE_PUBLIC_URL": settings.public_url, "GRIDGATE_REUSE_PORT": "true",
           "GRIDGATE_RUN_WORKER": "true" if settings.run_worker else "false"}
    children = [subprocess.Popen([sys.executable, "-m", "gateway.cli.main", "serve",
                                  "--log-level", log_level], env=env,
                                 preexec_fn=_die_with_parent)
                for _ in range(workers)]

    def forward(signum: int, _frame: FrameType | None) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    codes = [child.wait() for child in children]
    raise typer.Exit(next((c for c in codes if c not in (0, -signal.SIGTERM, -signal.SIGINT)),
                          0))


def _reuse_port_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    sock.listen(2048)
    return sock


def _die_with_parent() -> None:
    """In a child: receive SIGTERM when the parent dies, however it dies."""
    pr_set_pdeathsig = 1
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGTERM))


def worker() -> None:
    """Run the job worker alone (as many as you like against PostgreSQL)."""
    from gateway.settings import Settings
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
    from gateway.settings import Settings

    settings = Settings()
    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    engine = make_engine(settings.resolved_database_url)
    try:
        upgrade_database(engine)
    finally:
        engine.dispose()
    shown = make_url(settings.resolved_database_url).render_as_string(hide_password=True)
    render.stderr_console().print(f"Database {shown} is up to date.")
