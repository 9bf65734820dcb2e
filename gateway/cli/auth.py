"""`gridgate login` and `gridgate logout`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from gateway.cli import render
from gateway.cli.state import state
from gateway.client.credentials import Credentials, CredentialStore
from gateway.client.errors import ClientError, GatewayUnreachable
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
    who = f"client {used_client}" if client_id else "you"
    err.print(f"Logged in to {gateway} as {who}; token stored in {store.path}.")


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
