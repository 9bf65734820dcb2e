"""`gridgate login`, `gridgate whoami` and `gridgate logout`."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from gateway.cli import render
from gateway.cli.allocations import STANDINGS
from gateway.cli.jobs.commands import JsonOpt
from gateway.cli.state import state
from gateway.client.credentials import Credentials, CredentialStore
from gateway.client.errors import ClientError, GatewayUnreachable, ProblemError
from gateway.client.oauth import CLI_CLIENT_ID, DEFAULT_SCOPE, AuthorizationServer, OAuthError

SECRET_ENV = "GRIDGATE_CLIENT_SECRET"  # noqa: S105  (a variable name, not a secret)


def _read_secret(path: Path | None) -> str:
    if path is not None:
        try:
            secret = path.read_text(encoding="utf-8").strip()
        except OSError as exc:
            raise ClientError(f"Cannot read the client secret from {path}: "
                              f"{exc.strerror or exc}.") from exc
    else:
        secret = os.environ.get(SECRET_ENV, "").strip()
    if not secret:
        raise ClientError(f"Give the client secret with --client-secret-file FILE or "
                          f"the {SECRET_ENV} environment variable.")
    return secret


def login(
    ctx: typer.Context,
    client_id: Annotated[str | None, typer.Option(
        help="Log in as this client with the client-credentials grant (automation).")]
    = None,
    client_secret_file: Annotated[Path | None, typer.Option(
        help=f"File holding the client secret (else ${SECRET_ENV}).")] = None,
    scope: Annotated[str | None, typer.Option(
        help=f"Space-separated scopes to ask for (default for people: '{DEFAULT_SCOPE}').")]
    = None,
) -> None:
    """Log in to the gateway and store the token (0600) in the config directory.

    People use the device flow: open the printed URL, enter the code, approve.
    Automation uses --client-id with --client-secret-file or $GRIDGATE_CLIENT_SECRET.
    """
    gateway = state(ctx).gateway
    err = render.stderr_console()
    with AuthorizationServer(gateway) as server:
        if client_id is not None:
            token = server.client_credentials(client_id, _read_secret(client_secret_file),
                                              scope)
            used_client = client_id
        else:
            grant = server.device_authorization(CLI_CLIENT_ID, scope or DEFAULT_SCOPE)
            err.print(f"To log in, open {grant.verification_uri}")
            err.print(f"and enter the code: {grant.user_code}")
            if grant.verification_uri_complete:
                err.print(f"(or open {grant.verification_uri_complete})")
            with err.status("Waiting for you to approve the login..."):
                token = server.poll_device_token(grant, CLI_CLIENT_ID)
            used_client = CLI_CLIENT_ID
        creds = Credentials.from_token(gateway, token, used_client, server.token_endpoint)
    store = CredentialStore()
    store.save(creds)
    with state(ctx).client() as client:
        me = client.me()
    err.print(f"Logged in to {gateway} as {me['user']}; token stored in {store.path}.")


def _expiry(expires_at: float | None, now: float) -> str:
    if expires_at is None:
        return "no expiry given"
    moment = datetime.fromtimestamp(expires_at, UTC)
    left = expires_at - now
    when = render.when(moment)
    if left <= 0:
        return f"expired {when}"
    return f"{when} (in {render.duration(left)})"


def whoami(ctx: typer.Context, json_out: JsonOpt = False) -> None:
    """Who you are at the gateway: account, issuer, projects, scopes and token expiry."""
    cli = state(ctx)
    with cli.client() as client:
        me = client.me()
        try:
            projects: list[dict[str, str]] | None = [
                {"name": p["name"], "standing": p["standing"]} for p in client.projects()]
        except ProblemError:  # e.g. a token without jobs:read
            projects = None
    creds = CredentialStore().load(cli.gateway)  # after the calls: a refresh shows
    expires_at = creds.expires_at if creds is not None else None
    if json_out:
        render.print_json({"gateway": cli.gateway, **me, "projects": projects,
                           "client_id": creds.client_id if creds else None,
                           "token_expires_at": (datetime.fromtimestamp(expires_at, UTC)
                                                if expires_at is not None else None)})
        return
    renewal = ("; renewed with the refresh token" if creds is not None
               and creds.refresh_token else f"; then run '{cli.command('login')}' again")
    issuer = me["issuer"] + (" (this gateway's own accounts)" if me["issuer"] == "local"
                             else "")
    rows = [("Gateway", cli.gateway), ("User", me["user"]), ("Issuer", issuer),
            ("Subject", me["subject"]),
            ("Projects", "(not readable with this token: it lacks jobs:read)"
             if projects is None else ", ".join(
                 f"{p['name']} ({STANDINGS.get(p['standing'], p['standing'])})"
                 for p in projects) or "none"),
            ("Scopes", " ".join(me["scopes"]) or "none"),
            ("Roles", ", ".join(me["roles"]) or "none"),
            ("Client", creds.client_id if creds else "-"),
            ("Token expires", _expiry(expires_at, time.time()) + renewal)]
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    for name, value in rows:
        table.add_row(name, Text(value))
    render.stdout_console().print(table)


def logout() -> None:
    """Revoke the stored refresh token at the gateway and delete the credentials file."""
    store = CredentialStore()
    err = render.stderr_console()
    creds = store.load()
    if creds is None:
        err.print("Not logged in.")
        return
    if creds.refresh_token:
        try:
            with AuthorizationServer(creds.gateway) as server:
                server.revoke(creds.refresh_token, "refresh_token", creds.client_id)
        except (GatewayUnreachable, OAuthError) as exc:
            err.print(f"warning: could not revoke the token at {creds.gateway}: {exc.message}")
    store.delete()
    err.print(f"Logged out of {creds.gateway}.")
