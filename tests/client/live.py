"""A real gateway (API, OAuth server and worker) served by uvicorn in a thread.

Shared by the client and CLI tests: they talk to it over HTTP on a free port, as
a user would.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

from gateway.auth.accounts import create_client
from gateway.client.credentials import Credentials, CredentialStore
from gateway.client.oauth import AuthorizationServer
from gateway.db.engine import transaction
from gateway.runtime import Runtime, build_runtime
from gateway.serving import serving_app
from gateway.settings import Settings


@dataclass
class LiveGateway:
    url: str
    settings: Settings
    runtime: Runtime

    @property
    def server_env(self) -> dict[str, str]:
        """The environment of a command that runs on the gateway host (admin, db)."""
        return {"GRIDGATE_DATA_DIR": str(self.settings.data_dir),
                "GRIDGATE_PUBLIC_URL": self.settings.public_url,
                "GRIDGATE_DATABASE_URL": self.settings.resolved_database_url}

    def new_client(self, name: str = "tests") -> tuple[str, str]:
        """A client-credentials client with the usual scopes: (client_id, secret)."""
        with transaction(self.runtime.sessions) as session:
            client, secret = create_client(session, name,
                                           ["jobs:read", "jobs:write", "sites:read"],
                                           ["client_credentials"])
            assert secret is not None
            return client.client_id, secret

    def login(self, config_dir: Path, name: str = "tests") -> Credentials:
        """Log a new service client in, storing its token under `config_dir`."""
        client_id, secret = self.new_client(name)
        with AuthorizationServer(self.url) as server:
            token = server.client_credentials(client_id, secret)
            creds = Credentials.from_token(self.url, token, client_id, server.token_endpoint)
        CredentialStore(config_dir / "credentials.json").save(creds)
        return creds


@contextmanager
def serve_gateway(data_dir: Path, **overrides: object) -> Iterator[LiveGateway]:
    """Start the gateway app with the worker; stop it on exit."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    settings = Settings.model_validate({
        "data_dir": data_dir, "port": port, "public_url": url, "run_worker": True,
        "worker_poll_seconds": 0.1, "device_poll_interval_seconds": 1,
        "database_url": f"sqlite:///{data_dir / 'gridgate.db'}", **overrides,
    })
    runtime = build_runtime(settings)
    app = serving_app(settings, runtime)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]},
                              name="live-gateway", daemon=True)
    thread.start()
    deadline = time.monotonic() + 180
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the gateway did not start")
        time.sleep(0.05)
    try:
        yield LiveGateway(url, settings, runtime)
    finally:
        server.should_exit = True
        thread.join(timeout=60)
        sock.close()
        runtime.close()


def read_json(path: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads(path.read_text())
    return data


@contextmanager
def gateway_on(request: pytest.FixtureRequest, data_dir: Path,
               **settings: object) -> Iterator[LiveGateway]:
    """A live gateway on the database kind named by `request.param` (sqlite|postgresql),
    with these settings besides."""
    overrides: dict[str, object] = dict(settings)
    if request.param == "postgresql":
        databases = request.getfixturevalue("pg_databases")
        url = databases.create()
        overrides["database_url"] = url
    try:
        with serve_gateway(data_dir, **overrides) as gw:
            yield gw
    finally:
        if "database_url" in overrides:
            databases.drop(str(overrides["database_url"]))
