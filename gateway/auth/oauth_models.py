"""Our rows as Authlib sees them: clients, refresh tokens, device credentials, and the
framework-agnostic request the grants and endpoints read."""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from datetime import UTC, datetime

from authlib.common.security import is_secure_transport
from authlib.oauth2.rfc6749 import ClientMixin, OAuth2Payload, OAuth2Request, TokenMixin
from authlib.oauth2.rfc8628 import DeviceCredentialMixin

from gateway.auth.accounts import check_secret
from gateway.db.models import DeviceCode, OAuthClient, RefreshToken

log = logging.getLogger(__name__)


def _now() -> datetime:
    return datetime.now(UTC)


class Client(ClientMixin):  # type: ignore[misc]
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


class Token(TokenMixin):  # type: ignore[misc]
    """A `RefreshToken` row as Authlib's TokenMixin."""

    def __init__(self, row: RefreshToken) -> None:
        self.row = row

    def check_client(self, client: Client) -> bool:
        return self.row.client_id == client.get_client_id()

    def get_scope(self) -> str:
        return self.row.scope

    def get_expires_in(self) -> int:
        return max(0, int((self.row.expires_at - _now()).total_seconds()))

    def is_expired(self) -> bool:
        return self.row.expires_at <= _now()

    def is_revoked(self) -> bool:
        return self.row.revoked_at is not None


class DeviceCredential(DeviceCredentialMixin):  # type: ignore[misc]
    """A `DeviceCode` row as Authlib's DeviceCredentialMixin."""

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
