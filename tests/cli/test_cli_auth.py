"""Login, logout, expired sessions and unreachable gateways, as a user sees them."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import httpx

from gateway.cli import errors
from gateway.client.credentials import Credentials, CredentialStore
from tests.cli.helpers import Cli, approve_device_code
from tests.client.live import LiveGateway


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_unreachable_gateway_is_one_line_and_exit_3(gateway: LiveGateway,
                                                    tmp_path: Path) -> None:
    cli = Cli(gateway, tmp_path)
    cli.env["GRIDGATE_CLIENT_SECRET"] = "not-needed"
    url = f"http://127.0.0.1:{closed_port()}"
    # A login at that gateway, from when it was up.
    CredentialStore(tmp_path / "credentials.json").save(Credentials(
        gateway=url, access_token="t", refresh_token=None, expires_at=time.time() + 3600,
        client_id="c", token_endpoint=f"{url}/oauth/token"))
    for args in (["health"], ["list"], ["logs", "-f", "d3eca39f"],
                 ["login", "--client-id", "x"]):
        result = cli("--gateway", url, *args, code=errors.UNREACHABLE)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1, result.stderr
        assert url in lines[0] and "gridgate serve" in lines[0]
        assert "Traceback" not in result.output


def test_not_logged_in_exit_4(gateway: LiveGateway, tmp_path: Path) -> None:
    cli = Cli(gateway, tmp_path / "empty")
    result = cli("list", code=errors.AUTH)
    # Issue 14: the hint names the gateway to log in to (the tests' is not the default).
    url = gateway.url
    assert result.stderr.strip() == (
        f"error: You are not logged in to {url}; run 'gridgate login --gateway {url}'.")


def test_expired_session_exit_4(cli: Cli, tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "config" / "credentials.json")
    creds = store.load()
    assert creds is not None
    store.save(replace(creds, expires_at=time.time() - 10, refresh_token=None))
    result = cli("list", code=errors.AUTH)
    # Issue 14: the hint names the gateway to log in to (the tests' is not the default).
    expired = f"Your session has expired; run 'gridgate login --gateway {cli.gateway.url}'."
    assert expired in result.stderr
    # A refresh token the gateway no longer honours ends the same way.
    store.save(replace(creds, expires_at=time.time() - 10, refresh_token="revoked-or-bogus"))
    result = cli("list", code=errors.AUTH)
    assert expired in result.stderr


def test_token_for_another_gateway_is_not_sent(cli: Cli, tmp_path: Path) -> None:
    other = f"http://127.0.0.1:{closed_port()}"
    result = cli("--gateway", other, "list", code=errors.AUTH)
    assert f"logged in to {cli.gateway.url}" in result.stderr


def test_rejected_token_exit_4(cli: Cli, tmp_path: Path) -> None:
    store = CredentialStore(tmp_path / "config" / "credentials.json")
    creds = store.load()
    assert creds is not None
    store.save(replace(creds, access_token=creds.access_token[:-4] + "AAAA"))
    result = cli("list", code=errors.AUTH)
    assert "gridgate login" in result.stderr


def test_device_login_refresh_and_logout(gateway: LiveGateway, tmp_path: Path) -> None:
    """`gridgate login` prints a URL and code; once approved, commands work; an expiring
    token is refreshed; logout revokes the refresh token and deletes the file."""
    cli = Cli(gateway, tmp_path / "config")
    username = f"ada{os.getpid() % 1000}{int(time.time() * 1000) % 100000}"
    password = "correct horse battery staple"
    added = cli("admin", "user", "add", username, "--password-stdin",
                input=password + "\n")
    assert username in added.stderr

    env = {**os.environ, **cli.env}
    proc = subprocess.Popen([sys.executable, "-m", "gateway.cli.main", "login"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        seen = ""
        code = None
        deadline = time.monotonic() + 60
        while code is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            assert line, f"login ended early: {seen}"
            seen += line
            match = re.search(r"enter the code: (\S+)", line)
            code = match.group(1) if match else None
        assert code, seen
        assert f"{gateway.url}/oauth/device" in seen
        approve_device_code(gateway, code, username, password)
        _, rest = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, seen + rest
    assert "Logged in" in rest

    store = CredentialStore(tmp_path / "config" / "credentials.json")
    creds = store.load()
    assert creds is not None and creds.refresh_token and creds.client_id == "gridgate-cli"
    assert cli.json("list")["items"] == []

    # Make the access token look about to expire: the next command refreshes it.
    store.save(replace(creds, expires_at=time.time() + 5))
    cli("list")
    refreshed = store.load()
    assert refreshed is not None
    assert refreshed.access_token != creds.access_token
    assert refreshed.refresh_token != creds.refresh_token  # rotated
    assert refreshed.expires_at and refreshed.expires_at > time.time() + 60

    result = cli("logout")
    assert "Logged out" in result.stderr
    assert not store.path.exists()
    # The revoked refresh token no longer works at the gateway.
    answer = httpx.post(f"{gateway.url}/oauth/token", data={
        "grant_type": "refresh_token", "refresh_token": refreshed.refresh_token,
        "client_id": "gridgate-cli"})
    assert answer.status_code == 400 and answer.json()["error"] == "invalid_grant"
    assert "Not logged in" in cli("logout").stderr


def test_admin_user_add_password_mismatch_and_conflict(gateway: LiveGateway,
                                                       tmp_path: Path) -> None:
    cli = Cli(gateway, tmp_path)
    name = f"bob{int(time.time() * 1000) % 10**8}"
    result = cli("admin", "user", "add", name, input="password-one\npassword-two\n",
                 code=errors.USAGE)
    assert "differ" in result.stderr
    cli("admin", "user", "add", name, "--role", "researcher", "--role", "auditor",
        input="long enough pw\nlong enough pw\n")
    again = cli("admin", "user", "add", name, "--password-stdin", input="long enough pw\n",
                code=errors.PROBLEM)
    assert "already exists" in again.stderr
    short = cli("admin", "user", "add", name + "x", "--password-stdin", input="short\n",
                code=errors.PROBLEM)
    assert "8 characters" in short.stderr


def test_admin_client_create_for_a_user(gateway: LiveGateway, tmp_path: Path) -> None:
    cli = Cli(gateway, tmp_path)
    name = f"carol{int(time.time() * 1000) % 10**8}"
    cli("admin", "user", "add", name, "--password-stdin", input="long enough pw\n")
    created = json.loads(cli("admin", "client", "create", "pipeline", "--user", name,
                             "--scope", "jobs:read", "--json").stdout)
    assert created["scopes"] == ["jobs:read"] and created["client_secret"]
    missing = cli("admin", "client", "create", "x", "--user", "nobody-here",
                  code=errors.NOT_FOUND)
    assert "nobody-here" in missing.stderr
    human = cli("admin", "client", "create", "shown-once")
    assert "Client secret:" in human.stdout and "only once" in human.stderr
    # A read-only client can list but not submit: the gateway's 403 is a problem.
    secret = tmp_path / "s"
    secret.write_text(created["client_secret"])
    cli("login", "--client-id", created["client_id"], "--client-secret-file", str(secret))
    cli("list")
    denied = cli("submit", "--exe", "true", code=errors.PROBLEM)
    assert "jobs:write" in denied.stderr


def test_db_upgrade(tmp_path: Path, gateway: LiveGateway) -> None:
    cli = Cli(gateway, tmp_path)
    cli.env["GRIDGATE_DATA_DIR"] = str(tmp_path / "fresh")
    cli.env.pop("GRIDGATE_DATABASE_URL", None)  # the embedded default: SQLite in the data dir
    result = cli("db", "upgrade")
    assert "up to date" in result.stderr
    assert (tmp_path / "fresh" / "gridgate.db").exists()
