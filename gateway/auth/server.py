"""The built-in OAuth 2.0 authorization server: Authlib's framework-agnostic grants and
endpoints (gateway.auth.grants), bound to our database models and to the request's
unit of work.

The HTTP side (Starlette) lives in `gateway.api.routes.oauth`; this module sees only
`OAuthRequest`s and returns (status, body, headers) triples. Where it answers and what it
publishes: gateway.auth.metadata; the verification page's side of the device flow:
gateway.auth.device_approval.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from authlib.oauth2.rfc6749 import (
    AuthorizationServer,
    InvalidClientError,
    InvalidGrantError,
    InvalidScopeError,
    UnauthorizedClientError,
)
from authlib.oauth2.rfc6749.util import extract_basic_authorization
from sqlalchemy.orm import Session

from gateway.auth import tokens
from gateway.auth.accounts import CLI_CLIENT_ID, ensure_cli_client, get_client, get_user
from gateway.auth.grants import (
    ClientCredentials,
    DeviceAuthorization,
    DeviceCodes,
    RefreshTokens,
    Revocation,
)
from gateway.auth.keys import SigningKeys
from gateway.auth.login_throttle import (
    LoginLimits,
    record_failure,
    record_success,
    retry_after,
)
from gateway.auth.metadata import server_metadata
from gateway.auth.oauth_models import Client, OAuthRequest
from gateway.db.models import User
from gateway.domain.principal import SCOPES
from gateway.settings import Settings


class ClientThrottled(InvalidClientError):  # type: ignore[misc]
    """Too many wrong secrets for a client or from an address: 429 with Retry-After, in
    RFC 6749's error format (client authentication is what is refused)."""

    status_code = 429

    def __init__(self, wait: int) -> None:
        super().__init__(description="Too many failed client authentications for this "
                                     f"client or from this address; try again in {wait} s.")
        self.wait = wait

    def get_headers(self) -> list[tuple[str, str]]:
        headers: list[tuple[str, str]] = super().get_headers()
        return [*headers, ("Retry-After", str(self.wait))]


def _claimed_client_id(request: OAuthRequest) -> str | None:
    """The client id a request presents a secret for (HTTP Basic first, as Authlib
    tries it first), or None: no secret, nothing to guess."""
    client_id, secret = extract_basic_authorization(request.headers)
    if client_id and secret:
        return str(client_id)
    if request.form.get("client_id") and request.form.get("client_secret"):
        return request.form["client_id"]
    return None


class GatewayAuthorizationServer(AuthorizationServer):  # type: ignore[misc]
    """Authlib's AuthorizationServer over one unit of work (one per request from
    `address`, at `now`)."""

    def __init__(self, settings: Settings, keys: SigningKeys, session: Session, *,
                 address: str, now: datetime) -> None:
        super().__init__(scopes_supported=list(SCOPES))
        self.settings = settings
        self.keys = keys
        self.session = session
        self.address = address
        self.now = now
        self._clients: dict[str, Client | None] = {}
        self.register_token_generator("default", self._generate_token)
        self.register_grant(DeviceCodes)
        self.register_grant(ClientCredentials)
        self.register_grant(RefreshTokens)
        self.register_endpoint(DeviceAuthorization)
        self.register_endpoint(Revocation)

    def url(self, path: str) -> str:
        """An absolute URL of this server."""
        return self.settings.public_url.rstrip("/") + path

    def query_client(self, client_id: str) -> Client | None:
        if client_id not in self._clients:
            row = get_client(self.session, client_id)
            if row is None and client_id == CLI_CLIENT_ID:
                row = ensure_cli_client(self.session)
            self._clients[client_id] = Client(row) if row is not None else None
        return self._clients[client_id]

    def authenticate_client(self, request: OAuthRequest, methods: list[str],
                            endpoint: str = "token") -> Client:
        """Authlib's client authentication, throttled like the password form: wrong
        secrets are counted per client id and per address (every endpoint and grant)."""
        claimed = _claimed_client_id(request)
        if claimed is None:
            return cast(Client, super().authenticate_client(request, methods, endpoint))
        limits = LoginLimits.from_settings(self.settings)
        guessed = limits.client(claimed)
        counted = (guessed, limits.address(self.address))
        wait = retry_after(self.session, limits, counted, self.now)
        if wait is not None:
            raise ClientThrottled(wait)
        try:
            client = cast(Client, super().authenticate_client(request, methods, endpoint))
        except InvalidClientError:
            record_failure(self.session, limits, counted, self.now)
            raise
        record_success(self.session, guessed)
        return client

    def save_token(self, token: dict[str, Any], request: OAuthRequest) -> None:
        # Refresh tokens are stored by the generator; access tokens are not stored.
        self.session.flush()

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        """No signal bus here."""

    def handle_response(self, status: int, body: Any, headers: Any) -> tuple[int, Any, Any]:
        return status, body, headers

    def create_oauth2_request(self, request: OAuthRequest) -> OAuthRequest:
        return request

    def _generate_token(
        self,
        grant_type: str,
        client: Client,
        user: User | None = None,
        scope: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        if user is None:
            # Client credentials: the client acts as its own (service) user.
            user_id = client.row.user_id
            user = get_user(self.session, user_id) if user_id else None
            if user is None:
                raise UnauthorizedClientError("This client has no user to act as.")
        if user.disabled:
            raise InvalidGrantError("The account is disabled.")
        granted = client.get_allowed_scope(scope)
        if not granted:
            raise InvalidScopeError("None of the requested scopes is allowed for this client.")
        access = tokens.issue_access_token(
            self.settings, self.keys, subject=user.id, client_id=client.get_client_id(),
            scope=granted, username=user.username)
        body: dict[str, Any] = {
            "access_token": access.token,
            "token_type": "Bearer",
            "expires_in": access.expires_in,
            "scope": granted,
        }
        if include_refresh_token and client.check_grant_type("refresh_token"):
            body["refresh_token"] = tokens.issue_refresh_token(
                self.session, self.settings, user_id=user.id,
                client_id=client.get_client_id(), scope=granted)
        return body

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 authorization server metadata."""
        return server_metadata(self.settings)
