"""The grants and endpoints of the built-in authorization server, on Authlib's classes.

Grants: device code (RFC 8628) for `gridgate login`, client credentials for automation,
refresh token (rotated on every use). Endpoints: device authorization, revocation
(RFC 7009). Every one-time credential is consumed by one atomic statement, so of two
concurrent requests with it only one gets tokens.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from authlib.oauth2.rfc6749 import (
    ClientCredentialsGrant,
    InvalidGrantError,
    InvalidScopeError,
    RefreshTokenGrant,
    UnauthorizedClientError,
)
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc8628 import (
    DEVICE_CODE_GRANT_TYPE,
    DeviceAuthorizationEndpoint,
    DeviceCodeGrant,
)

from gateway.auth import tokens
from gateway.auth.accounts import get_user
from gateway.auth.device_approval import device_code_hash, new_user_code
from gateway.auth.metadata import CLIENT_AUTH_METHODS, VERIFICATION_PATH
from gateway.auth.oauth_models import Client, DeviceCredential, OAuthRequest, Token
from gateway.db.models import DeviceCode, User
from gateway.repositories.identity import device_codes

if TYPE_CHECKING:
    from gateway.auth.server import GatewayAuthorizationServer


def _now() -> datetime:
    return datetime.now(UTC)


class _OnOurServer:
    """The server a grant or endpoint runs on, typed as ours."""

    server: Any

    @property
    def _server(self) -> GatewayAuthorizationServer:
        server: GatewayAuthorizationServer = self.server
        return server


class ClientCredentials(ClientCredentialsGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]


class RefreshTokens(_OnOurServer, RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = CLIENT_AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True

    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:
        session = self._server.session
        row = tokens.find_refresh_token(session, refresh_token)
        if row is None:
            return None
        if row.revoked_at is not None:
            # A rotated-out token came back: someone holds a stolen copy. Revoke them all.
            tokens.revoke_refresh_family(session, user_id=row.user_id, client_id=row.client_id)
            return None
        return Token(row) if tokens.is_usable(row) else None

    def validate_token_request(self) -> None:
        super().validate_token_request()
        # Valid for this client and scope: consume it atomically, so that of two
        # concurrent refreshes with one token only one gets new tokens.
        if not tokens.consume_refresh_token(self._server.session,
                                            self.request.refresh_token.row):
            raise InvalidGrantError("This refresh token was already used.")

    def authenticate_user(self, refresh_token: Token) -> User:
        user = get_user(self._server.session, refresh_token.row.user_id)
        if user is None or user.disabled:
            raise InvalidGrantError("The account behind this refresh token is disabled or gone.")
        return user

    def revoke_old_credential(self, refresh_token: Token) -> None:
        """Already revoked when it was consumed in `validate_token_request`."""


class DeviceCodes(_OnOurServer, DeviceCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = CLIENT_AUTH_METHODS

    def query_device_credential(self, device_code: str) -> DeviceCredential:
        row = device_codes.get(self._server.session, device_code_hash(device_code))
        if row is None or row.status == "used":
            raise InvalidGrantError("Unknown or already used device_code.")
        self._row = row
        return DeviceCredential(row)

    def query_user_grant(self, user_code: str) -> tuple[User | None, bool] | None:
        row = self._row
        if row.status == "denied":
            return None, False
        if row.status != "approved" or row.user_id is None:
            return None
        user = get_user(self._server.session, row.user_id)
        if user is None or user.disabled:
            return None, False
        return user, True

    def should_slow_down(self, credential: DeviceCredential) -> bool:
        row = credential.row
        now = _now()
        too_soon = (row.last_polled_at is not None
                    and now - row.last_polled_at < timedelta(seconds=row.interval))
        row.last_polled_at = now
        if too_soon:
            # RFC 8628 §3.5: this and every later request must wait 5 s longer.
            row.interval += 5
        self._server.session.flush()
        return too_soon

    def validate_token_request(self) -> None:
        super().validate_token_request()
        # Approved: consume the code now, atomically, so it yields tokens only once.
        if not device_codes.consume_approved(self._server.session, self._row.device_code_hash):
            raise InvalidGrantError("This device_code was already used.")


class DeviceAuthorization(_OnOurServer, DeviceAuthorizationEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS = CLIENT_AUTH_METHODS

    def authenticate_client(self, request: OAuthRequest) -> Client:
        client: Client = super().authenticate_client(request)
        if not client.check_grant_type(DEVICE_CODE_GRANT_TYPE):
            raise UnauthorizedClientError("This client may not use the device flow.")
        return client

    def generate_user_code(self) -> str:
        session = self._server.session
        # Old codes go first, so the live ones stay few and a new code never collides.
        device_codes.purge_expired_before(session, _now() - timedelta(hours=1))
        for _ in range(10):
            code = new_user_code()
            if not device_codes.user_code_taken(session, code):
                return code
        raise RuntimeError("could not find an unused user code")

    def generate_device_code(self) -> str:
        return secrets.token_urlsafe(32)

    def get_verification_uri(self) -> str:
        return self._server.settings.public_url.rstrip("/") + VERIFICATION_PATH

    def create_endpoint_response(self, request: OAuthRequest) -> tuple[int, Any, Any]:
        settings = self._server.settings
        self.EXPIRES_IN = settings.device_code_ttl_seconds
        self.INTERVAL = settings.device_poll_interval_seconds
        status, body, headers = super().create_endpoint_response(request)
        # Authlib's helper would also accept an http(s) URL with a query; be explicit.
        body["verification_uri_complete"] = (
            f"{body['verification_uri']}?{urlencode({'user_code': body['user_code']})}")
        return status, body, headers

    def save_device_credential(self, client_id: str, scope: str | None,
                               data: dict[str, Any]) -> None:
        session = self._server.session
        client = self._server.query_client(client_id)
        assert client is not None
        granted = client.get_allowed_scope(scope)
        if not granted:
            raise InvalidScopeError("None of the requested scopes is allowed for this client.")
        device_codes.add(session, DeviceCode(
            device_code_hash=device_code_hash(data["device_code"]),
            user_code=data["user_code"],
            client_id=client_id,
            scope=granted,
            expires_at=_now() + timedelta(seconds=int(data["expires_in"])),
            interval=int(data["interval"]),
            status="pending",
        ))
        session.flush()


class Revocation(_OnOurServer, RevocationEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS = CLIENT_AUTH_METHODS

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        # Access tokens are self-contained JWTs that live an hour at most; only refresh
        # tokens are stored, so only they can be revoked. Anything else is answered 200
        # as RFC 7009 §2.2 asks for tokens the server does not know.
        row = tokens.find_refresh_token(self._server.session, token_string)
        return Token(row) if row is not None else None

    def revoke_token(self, token: Token, request: OAuthRequest) -> None:
        tokens.revoke_refresh_token(self._server.session, token.row)
