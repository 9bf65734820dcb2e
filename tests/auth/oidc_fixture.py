"""A real third-party OpenID provider (npm `oidc-provider`, tests/oidc/provider.mjs).

The session-scoped `oidc_provider` fixture installs the node modules if they are
missing (`npm ci`, from the committed lock file), starts node on a free loopback port,
waits for its READY line, and stops exactly that process (by its PID) at the end.
"""

from __future__ import annotations

import fcntl
import os
import queue
import secrets
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

OIDC_DIR = Path(__file__).resolve().parent.parent / "oidc"
GRIDGATE_RESOURCE = "urn:gridgate:api"
OTHER_RESOURCE = "urn:example:other-api"
AUDIENCE = "gridgate"
READY_TIMEOUT = 60.0


@dataclass(frozen=True)
class OidcProvider:
    issuer: str
    token_endpoint: str
    jwks_uri: str
    client_id: str
    client_secret: str
    audience: str

    def client_credentials_token(self, resource: str | None = None,
                                 scope: str | None = "jobs:read jobs:write") -> str:
        """An access token for the test client, from the provider's token endpoint."""
        form = {"grant_type": "client_credentials"}
        if scope:
            form["scope"] = scope
        if resource:
            form["resource"] = resource
        response = httpx.post(self.token_endpoint, data=form, timeout=30,
                              auth=(self.client_id, self.client_secret))
        assert response.status_code == 200, response.text
        token: str = response.json()["access_token"]
        return token


def _npm_ci() -> None:
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail("npm is not installed; tests/run.sh installs it (apt: nodejs npm)")
    subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=OIDC_DIR,
                   check=True, timeout=600)


def _pump(stream: object, lines: queue.Queue[str]) -> None:
    for line in stream:  # type: ignore[attr-defined]
        lines.put(line)


@pytest.fixture(scope="session")
def oidc_provider(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcProvider]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed; tests/run.sh installs it")
    # Each xdist worker starts its own provider: one installs the modules while the
    # others wait (`npm ci` empties node_modules first, so a provider started meanwhile
    # would not find its package).
    with (Path(tempfile.gettempdir()) / "gridgate-oidc-npm-ci.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (OIDC_DIR / "node_modules" / "oidc-provider").is_dir():
            _npm_ci()
    client_id = "gridgate-automation"
    client_secret = secrets.token_urlsafe(24)
    env = {**os.environ, "OIDC_AUDIENCE": AUDIENCE, "OIDC_CLIENT_ID": client_id,
           "OIDC_CLIENT_SECRET": client_secret}
    log_path = tmp_path_factory.mktemp("oidc") / "provider.log"
    with log_path.open("wb") as log:
        proc = subprocess.Popen([node, "provider.mjs", "0"], cwd=OIDC_DIR, env=env,
                                stdout=subprocess.PIPE, stderr=log, text=True)
    lines: queue.Queue[str] = queue.Queue()
    pump = threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True)
    pump.start()
    try:
        issuer = None
        deadline = time.monotonic() + READY_TIMEOUT
        while issuer is None:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"oidc-provider did not get ready (exit {proc.returncode}): "
                            f"{log_path.read_text()}")
            try:
                line = lines.get(timeout=0.5)
            except queue.Empty:
                continue
            if line.startswith("READY "):
                issuer = line.split()[1]
        discovery = httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=30).json()
        assert discovery["issuer"] == issuer
        yield OidcProvider(issuer=issuer, token_endpoint=discovery["token_endpoint"],
                           jwks_uri=discovery["jwks_uri"], client_id=client_id,
                           client_secret=client_secret, audience=AUDIENCE)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
        # The provider has exited: the pump reads to the end, then its pipe is closed.
        pump.join(timeout=10)
        assert proc.stdout is not None
        proc.stdout.close()
