"""What a gateway process serves: the API, and the worker in a background thread when
`settings.run_worker` (the composition root above both: the API never imports the worker)."""

from __future__ import annotations

import socket
import threading

import uvicorn
from fastapi import FastAPI

from gateway.api.app import create_app
from gateway.api.http.stopping import mark_stopping
from gateway.runtime import Runtime
from gateway.settings import Settings
from gateway.worker.loop import Worker


def _run_worker(runtime: Runtime, stop: threading.Event) -> None:
    Worker(runtime).run(stop)


def serving_app(settings: Settings, runtime: Runtime | None = None) -> FastAPI:
    """The app `gridgate serve` runs: the API, plus the worker unless run_worker is off."""
    return create_app(settings, runtime, background=_run_worker if settings.run_worker else None)


class GatewayServer(uvicorn.Server):
    """uvicorn, telling the app when its shutdown begins (gateway.api.http.stopping), so that
    followed output streams end cleanly within the grace period."""

    def __init__(self, config: uvicorn.Config, app: FastAPI) -> None:
        super().__init__(config)
        self.gateway_app = app

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        mark_stopping(self.gateway_app)
        await super().shutdown(sockets)
