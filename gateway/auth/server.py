"""The built-in OAuth 2.0 authorization server: Authlib's framework-agnostic grants and
endpoints, bound to our database models and to one SQLAlchemy session per request.

Grants: device code (RFC 8628) for `gridgate login`, client credentials for automation,
refresh token (rotated on every use). Endpoints: device authorization, revocation
(RFC 7009). The HTTP side (Starlette) lives in `gateway.api.routes.oauth`; this module
sees only `OAuthRequest`s and returns (status, body, headers) triples.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import secrets
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlencode

from authlib.common.security import is_secure_transport
from authlib.oauth2.rfc6749 import (
    AuthorizationServer,
    ClientCredentialsGrant,
    ClientMixin,
    InvalidGrantError,
    InvalidScopeError,
    OAuth2Payload,
    OAuth2Request,
    RefreshTokenGrant,
    TokenMixin,
    UnauthorizedClientError,
)
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc8628 import (
    DEVICE_CODE_GRANT_TYPE,
    DeviceAuthorizationEndpoint,
    DeviceCodeGrant,
    DeviceCredentialMixin,
)
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from gateway.auth import tokens
from gateway.auth.keys import SigningKeys
from gateway.auth.principal import SCOPES
from gateway.db.models import DeviceCode, OAuthClient, RefreshToken, User
from gateway.services.accounts import CLI_CLIENT_ID, check_secret, ensure_cli_client
from gateway.settings import Settings

log = logging.getLogger(__name__)

TOKEN_PATH = "/oauth/token"  # noqa: S105 (a path, not a secret)
DEVICE_AUTHORIZATION_PATH = "/oauth/device_authorization"
VERIFICATION_PATH = "/oauth/device"
REVOCATION_PATH = "/oauth/revoke"
JWKS_PATH = "/.well-known/jwks.json"
METADATA_PATH = "/.well-known/oauth-authorization-server"
CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]
# RFC 8628 §6.1: 20 consonants, 8 characters: 20^8 ≈ 2.6e10 codes, ~34.5 bits.
USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ"
USER_CODE_LENGTH = 8


def _now() -> datetime:
    return datetime.now(UTC)


def _sha256(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def new_user_code() -> str:
    """A user code such as `WDJB-MJHT` (RFC 8628 §6.1)."""
    chars = "".join(secrets.choice(USER_CODE_ALPHABET) for _ in range(USER_CODE_LENGTH))
    return f"{chars[:4]}-{chars[4:]}"


def normalize_user_code(text: str) -> str | None:
    """What a person typed -> the stored form (case, spaces and dashes forgiven)."""
    chars = "".join(c for c in text.upper() if c.isalnum())
    if len(chars) != USER_CODE_LENGTH or any(c not in USER_CODE_ALPHABET for c in chars):
        return None
    return f"{chars[:4]}-{chars[4:]}"


# ---------------------------------------------------------------- models for Authlib


class _Client(ClientMixin):  # type: ignore[misc]
    """An `OAuthClient` row as Authlib's ClientMixin."""

    def __init__(self, row: OAuthClient) -> None:
        self.row = row

    @property
    def is_public(self) -> bool:
        return self.row.secret_hash is None

    def get_client_id(self) -> str:
        return self.row.client_id

    def get_default_redirect_uri(self) -> None:
        return None

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        return False

    def check_response_type(self, response_type: str) -> bool:
        return False

    def get_allowed_scope(self, scope: str | None) -> str:
        allowed = list(self.row.scopes or [])
        if not scope:
            return " ".join(allowed)
        return " ".join(s for s in allowed if s in scope.split())

    def check_client_secret(self, client_secret: str) -> bool:
        return check_secret(self.row.secret_hash, client_secret)

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        if self.is_public:
            return method == "none"
        return method in ("client_secret_basic", "client_secret_post")

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in (self.row.grant_types or [])


class _RefreshToken(TokenMixin):  # type: ignore[misc]
    def __init__(self, row: RefreshToken) -> None:
        self.row = row

    def check_client(self, client: _Client) -> bool:
        return self.row.client_id == client.get_client_id()

    def get_scope(self) -> str:
        return self.row.scope

    def get_expires_in(self) -> int:
        return max(0, int((self.row.expires_at - _now()).total_seconds()))

    def is_expired(self) -> bool:
        return self.row.expires_at <= _now()

    def is_revoked(self) -> bool:
        return self.row.revoked_at is not None


class _DeviceCredential(DeviceCredentialMixin):  # type: ignore[misc]
    def __init__(self, row: DeviceCode) -> None:
        self.row = row

    def get_client_id(self) -> str:
        return self.row.client_id

    def get_scope(self) -> str:
        return self.row.scope

    def get_user_code(self) -> str:
        return self.row.user_code

    def is_expired(self) -> bool:
        return self.row.expires_at <= _now()


# ---------------------------------------------------------------- the request


class _Payload(OAuth2Payload):  # type: ignore[misc]
    def __init__(self, data: dict[str, str]) -> None:
        self._data = data

    @property
    def data(self) -> dict[str, str]:
        return self._data

    @property
    def datalist(self) -> dict[str, list[str]]:
        return {k: [v] for k, v in self._data.items()}


@functools.cache
def _warn_insecure(uri: str) -> None:
    log.warning("the built-in authorization server is reached over plain http (%s); "
                "put it behind https (set GRIDGATE_PUBLIC_URL to the https URL)", uri)


class OAuthRequest(OAuth2Request):  # type: ignore[misc]
    """A token-endpoint style request: form parameters (each at most once) and headers."""

    def __init__(self, method: str, uri: str, form: dict[str, str],
                 headers: Mapping[str, str], query: Mapping[str, str] | None = None) -> None:
        # Authlib refuses plain-http URIs except on loopback. Where TLS ends is a
        # deployment matter (usually a proxy in front of us), so say it once and go on.
        if not is_secure_transport(uri):
            _warn_insecure(uri)
            uri = "https://" + uri.split("://", 1)[-1]
        super().__init__(method=method, uri=uri, headers=headers)
        self._form = form
        self._query = dict(query or {})
        self.payload = _Payload(form)

    @property
    def form(self) -> dict[str, str]:
        return self._form

    @property
    def args(self) -> dict[str, str]:
        return self._query


# ---------------------------------------------------------------- grants


class _ClientCredentialsGrant(ClientCredentialsGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]


class _RefreshTokenGrant(RefreshTokenGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = CLIENT_AUTH_METHODS
    INCLUDE_NEW_REFRESH_TOKEN = True

    @property
    def _server(self) -> GatewayAuthorizationServer:
        server: GatewayAuthorizationServer = self.server
        return server

    def authenticate_refresh_token(self, refresh_token: str) -> _RefreshToken | None:
        session = self._server.session
        row = tokens.find_refresh_token(session, refresh_token)
        if row is None:
            return None
        if row.revoked_at is not None:
            # A rotated-out token came back: someone holds a stolen copy. Revoke them all.
            tokens.revoke_refresh_family(session, user_id=row.user_id, client_id=row.client_id)
            return None
        return _RefreshToken(row) if tokens.is_usable(row) else None

    def validate_token_request(self) -> None:
        super().validate_token_request()
        # Valid for this client and scope: consume it atomically, so that of two
        # concurrent refreshes with one token only one gets new tokens.
        row = self.request.refresh_token.row
        result = self._server.session.execute(
            update(RefreshToken)
            .where(RefreshToken.token_hash == row.token_hash, RefreshToken.revoked_at.is_(None))
            .values(revoked_at=_now())
            .execution_options(synchronize_session=False)
        )
        if int(getattr(result, "rowcount", 0) or 0) != 1:
            raise InvalidGrantError("This refresh token was already used.")

    def authenticate_user(self, refresh_token: _RefreshToken) -> User:
        user = self._server.session.get(User, refresh_token.row.user_id)
        if user is None or user.disabled:
            raise InvalidGrantError("The account behind this refresh token is disabled or gone.")
        return user

    def revoke_old_credential(self, refresh_token: _RefreshToken) -> None:
        """Already revoked when it was consumed in `validate_token_request`."""


class _DeviceCodeGrant(DeviceCodeGrant):  # type: ignore[misc]
    TOKEN_ENDPOINT_AUTH_METHODS = CLIENT_AUTH_METHODS

    @property
    def _server(self) -> GatewayAuthorizationServer:
        server: GatewayAuthorizationServer = self.server
        return server

    def query_device_credential(self, device_code: str) -> _DeviceCredential:
        row = self._server.session.get(DeviceCode, _sha256(device_code))
        if row is None or row.status == "used":
            raise InvalidGrantError("Unknown or already used device_code.")
        self._row = row
        return _DeviceCredential(row)

    def query_user_grant(self, user_code: str) -> tuple[User | None, bool] | None:
        row = self._row
        if row.status == "denied":
            return None, False
        if row.status != "approved" or row.user_id is None:
            return None
        user = self._server.session.get(User, row.user_id)
        if user is None or user.disabled:
            return None, False
        return user, True

    def should_slow_down(self, credential: _DeviceCredential) -> bool:
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
        result = self._server.session.execute(
            update(DeviceCode)
            .where(DeviceCode.device_code_hash == self._row.device_code_hash,
                   DeviceCode.status == "approved")
            .values(status="used")
            .execution_options(synchronize_session=False)
        )
        if int(getattr(result, "rowcount", 0) or 0) != 1:
            raise InvalidGrantError("This device_code was already used.")


# ---------------------------------------------------------------- endpoints


class _DeviceAuthorizationEndpoint(DeviceAuthorizationEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS = CLIENT_AUTH_METHODS

    @property
    def _server(self) -> GatewayAuthorizationServer:
        server: GatewayAuthorizationServer = self.server
        return server

    def authenticate_client(self, request: OAuthRequest) -> _Client:
        client: _Client = super().authenticate_client(request)
        if not client.check_grant_type(DEVICE_CODE_GRANT_TYPE):
            raise UnauthorizedClientError("This client may not use the device flow.")
        return client

    def generate_user_code(self) -> str:
        session = self._server.session
        # Old codes go first, so the live ones stay few and a new code never collides.
        session.execute(delete(DeviceCode).where(
            DeviceCode.expires_at < _now() - timedelta(hours=1)))
        for _ in range(10):
            code = new_user_code()
            if session.scalar(select(DeviceCode.user_code).where(
                    DeviceCode.user_code == code)) is None:
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
        session.add(DeviceCode(
            device_code_hash=_sha256(data["device_code"]),
            user_code=data["user_code"],
            client_id=client_id,
            scope=granted,
            expires_at=_now() + timedelta(seconds=int(data["expires_in"])),
            interval=int(data["interval"]),
            status="pending",
        ))
        session.flush()


class _RevocationEndpoint(RevocationEndpoint):  # type: ignore[misc]
    CLIENT_AUTH_METHODS = CLIENT_AUTH_METHODS

    @property
    def _server(self) -> GatewayAuthorizationServer:
        server: GatewayAuthorizationServer = self.server
        return server

    def query_token(self, token_string: str, token_type_hint: str | None) -> _RefreshToken | None:
        # Access tokens are self-contained JWTs that live an hour at most; only refresh
        # tokens are stored, so only they can be revoked. Anything else is answered 200
        # as RFC 7009 §2.2 asks for tokens the server does not know.
        row = tokens.find_refresh_token(self._server.session, token_string)
        return _RefreshToken(row) if row is not None else None

    def revoke_token(self, token: _RefreshToken, request: OAuthRequest) -> None:
        tokens.revoke_refresh_token(self._server.session, token.row)


# ---------------------------------------------------------------- the server


class GatewayAuthorizationServer(AuthorizationServer):  # type: ignore[misc]
    """Authlib's AuthorizationServer over one database session (one per request)."""

    def __init__(self, settings: Settings, keys: SigningKeys, session: Session) -> None:
        super().__init__(scopes_supported=list(SCOPES))
        self.settings = settings
        self.keys = keys
        self.session = session
        self._clients: dict[str, _Client | None] = {}
        self.register_token_generator("default", self._generate_token)
        self.register_grant(_DeviceCodeGrant)
        self.register_grant(_ClientCredentialsGrant)
        self.register_grant(_RefreshTokenGrant)
        self.register_endpoint(_DeviceAuthorizationEndpoint)
        self.register_endpoint(_RevocationEndpoint)

    def url(self, path: str) -> str:
        """An absolute URL of this server."""
        return self.settings.public_url.rstrip("/") + path

    def query_client(self, client_id: str) -> _Client | None:
        if client_id not in self._clients:
            row = self.session.get(OAuthClient, client_id)
            if row is None and client_id == CLI_CLIENT_ID:
                row = ensure_cli_client(self.session)
            self._clients[client_id] = _Client(row) if row is not None else None
        return self._clients[client_id]

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
        client: _Client,
        user: User | None = None,
        scope: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        if user is None:
            # Client credentials: the client acts as its own (service) user.
            user_id = client.row.user_id
            user = self.session.get(User, user_id) if user_id else None
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


def server_metadata(settings: Settings) -> dict[str, Any]:
    """RFC 8414 metadata of the built-in authorization server."""
    base = settings.public_url.rstrip("/")
    return {
        "issuer": settings.public_url,
        "token_endpoint": base + TOKEN_PATH,
        "device_authorization_endpoint": base + DEVICE_AUTHORIZATION_PATH,
        "revocation_endpoint": base + REVOCATION_PATH,
        "jwks_uri": base + JWKS_PATH,
        "grant_types_supported": [DEVICE_CODE_GRANT_TYPE, "client_credentials",
                                  "refresh_token"],
        # No authorization endpoint: logins go through the device flow.
        "response_types_supported": [],
        "scopes_supported": list(SCOPES),
        "token_endpoint_auth_methods_supported": CLIENT_AUTH_METHODS,
        "revocation_endpoint_auth_methods_supported": CLIENT_AUTH_METHODS,
    }


# ---------------------------------------------------------------- the verification page


class DeviceApprovalError(Exception):
    """Why a verification-page submission could not be accepted (a sentence for people)."""


def pending_device_code(session: Session, user_code: str) -> DeviceCode:
    """The live, pending authorization for a typed user code, or DeviceApprovalError."""
    code = normalize_user_code(user_code)
    row = None
    if code is not None:
        row = session.scalar(select(DeviceCode).where(DeviceCode.user_code == code))
    if row is None or row.status != "pending":
        raise DeviceApprovalError("That code is not valid. Check it against the one your "
                                  "terminal shows, or start the login again.")
    if row.expires_at <= _now():
        raise DeviceApprovalError("That code has expired. Start the login again.")
    return row


def decide_device_code(row: DeviceCode, user: User, approve: bool) -> None:
    """Record the user's answer; the polling client picks it up at the token endpoint."""
    row.user_id = user.id
    row.status = "approved" if approve else "denied"
