"""schemathesis (`run --checks all`) against a real gateway's own /openapi.json, with a
real token, finds nothing: no server error, no undocumented status or content type, no
schema-valid request rejected, no schema-violating one accepted.

Bounded for every run of the suite: a fixed number of examples per operation and a fixed
seed (the same cases each time). The gateway runs without its worker, so no generated job
ever runs.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.client.oauth import AuthorizationServer
from tests.client.live import LiveGateway, serve_gateway

CONFIG = Path(__file__).with_name("schemathesis.toml")
SEED = 14
MAX_EXAMPLES = 10


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    with serve_gateway(tmp_path_factory.mktemp("gateway"), run_worker=False) as gw:
        yield gw


def test_schemathesis_finds_nothing(gateway: LiveGateway, tmp_path: Path) -> None:
    client_id, secret = gateway.new_client("schemathesis")
    with AuthorizationServer(gateway.url) as server:
        token = server.client_credentials(client_id, secret).access_token
    run = subprocess.run(
        [sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG), "run",
         f"{gateway.url}/openapi.json",
         "--checks", "all", "--header", f"Authorization: Bearer {token}",
         "--max-examples", str(MAX_EXAMPLES), "--seed", str(SEED),
         "--generation-deterministic", "--workers", "1", "--request-timeout", "10",
         "--report-dir", str(tmp_path)],
        capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path)
    (tmp_path / "schemathesis.txt").write_text(run.stdout + run.stderr)
    assert run.returncode == 0, run.stdout + run.stderr
