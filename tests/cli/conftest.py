from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.helpers import Cli
from tests.client.live import LiveGateway, gateway_on


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[LiveGateway]:
    with gateway_on(request, tmp_path_factory.mktemp("gateway")) as gw:
        yield gw


@pytest.fixture
def cli(gateway: LiveGateway, tmp_path: Path) -> Cli:
    """A CLI logged in (client credentials) as a fresh service user."""
    c = Cli(gateway, tmp_path / "config")
    created = json.loads(c("admin", "client", "create", "cli-tests", "--json").stdout)
    secret_file = tmp_path / "secret"
    secret_file.write_text(created["client_secret"] + "\n")
    result = c("login", "--client-id", created["client_id"], "--client-secret-file",
               str(secret_file))
    assert "Logged in" in result.stderr
    return c
