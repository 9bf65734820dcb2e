"""Issue 14, a researcher's first hour with the CLI: the gateway is remembered with the
login and `--gateway` works after any command; `whoami`; MPI jobs without a launcher."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import typer.main
from typer.core import TyperGroup

from gateway.cli import errors
from gateway.cli.main import app
from gateway.cli.state import HOST_COMMANDS
from tests.cli.helpers import Cli
from tests.client.live import LiveGateway


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def logged_in_without_env(gateway: LiveGateway, tmp_path: Path) -> Cli:
    """A CLI with no GRIDGATE_URL that logged in with `login --gateway URL`."""
    cli = Cli(gateway, tmp_path / "config")
    del cli.env["GRIDGATE_URL"]
    client_id, secret = gateway.new_client("first-hour")
    (tmp_path / "secret").write_text(secret)
    cli("login", "--gateway", gateway.url, "--client-id", client_id,
        "--client-secret-file", str(tmp_path / "secret"))
    return cli


def test_the_gateway_of_the_login_is_remembered(gateway: LiveGateway, tmp_path: Path) -> None:
    cli = logged_in_without_env(gateway, tmp_path)
    # No --gateway, no GRIDGATE_URL: the commands go where the login went.
    assert cli.json("list")["items"] == []
    job_id = cli("submit", "-q", "--exe", "true").stdout.strip()
    assert cli.json("show", job_id)["id"] == job_id
    health = cli("health").stdout
    assert health.startswith(f"{gateway.url}: ok")


def test_gateway_is_accepted_after_any_command(gateway: LiveGateway, tmp_path: Path) -> None:
    cli = logged_in_without_env(gateway, tmp_path)
    assert cli.json("list", "--gateway", gateway.url)["items"] == []
    other = f"http://127.0.0.1:{closed_port()}"
    # The option after the command wins over GRIDGATE_URL and the remembered gateway.
    cli.env["GRIDGATE_URL"] = gateway.url
    down = cli("health", "--gateway", other, code=errors.UNREACHABLE)
    assert other in down.stderr
    # A login elsewhere is not sent to `other`; the hint names both servers.
    refused = cli("list", "--gateway", other, code=errors.AUTH)
    assert refused.stderr.strip() == (
        f"error: You are logged in to {gateway.url}, not {other}: run 'gridgate login "
        f"--gateway {other}' to log in there, or leave out --gateway and GRIDGATE_URL to "
        f"use {gateway.url}.")


def test_every_command_that_reaches_a_gateway_takes_the_option() -> None:
    root = typer.main.get_command(app)
    missing, seen = [], 0

    def walk(group: TyperGroup, path: str) -> None:
        nonlocal seen
        for name, command in group.commands.items():
            where = f"{path} {name}".strip()
            if where in HOST_COMMANDS:
                continue
            if isinstance(command, TyperGroup):
                walk(command, where)
                continue
            seen += 1
            if not any("--gateway" in getattr(p, "opts", ()) for p in command.params):
                missing.append(where)

    assert isinstance(root, TyperGroup)
    walk(root, "")
    assert seen > 30 and missing == []


def test_whoami_names_the_account_projects_scopes_and_expiry(
        gateway: LiveGateway, tmp_path: Path) -> None:
    cli = logged_in_without_env(gateway, tmp_path)
    me = cli.json("whoami")
    assert me["gateway"] == gateway.url and me["issuer"] == "local"
    assert me["user"].startswith("client first-hour (") and me["subject"]
    assert me["scopes"] == ["jobs:read", "jobs:write", "sites:read"]
    assert me["projects"] == [{"name": f"~{me['client_id']}", "standing": "pi"}]
    assert me["token_expires_at"] is not None and me["client_id"]
    table = cli("whoami").stdout
    for line in (f"Gateway        {gateway.url}", f"User           {me['user']}",
                 "Issuer         local (this gateway's own accounts)",
                 f"Projects       ~{me['client_id']} (PI)",
                 "Scopes         jobs:read jobs:write sites:read"):
        assert line in table, table
    assert "Token expires" in table and "(in " in table
    # The login said who, too.
    (tmp_path / "again").mkdir()
    again = logged_in_without_env(gateway, tmp_path / "again")
    who = again.json("whoami")["user"]
    login = again("login", "--gateway", gateway.url, "--client-id",
                  again.json("whoami")["client_id"], "--client-secret-file",
                  str(tmp_path / "again" / "secret"))
    assert f"Logged in to {gateway.url} as {who}; token stored in " in login.stderr


def test_ranks_without_a_launcher_is_refused_naming_mpi_launcher(cli: Cli) -> None:
    result = cli("submit", "--exe", "true", "--ranks", "2", code=errors.PROBLEM)
    assert result.stderr.startswith("error: 2 ranks need an MPI launcher")
    assert "mpi.launcher" in result.stderr
    assert cli.json("list")["items"] == [] or all(
        j["spec"]["resources"].get("ranks", 1) == 1 for j in cli.json("list")["items"])


def test_json_of_whoami_is_json(cli: Cli) -> None:
    assert json.loads(cli("whoami", "--json").stdout)["user"]
