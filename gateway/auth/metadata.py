"""Where the built-in authorization server answers, and what it publishes (RFC 8414)."""

from __future__ import annotations

from typing import Any

from authlib.oauth2.rfc8628 import DEVICE_CODE_GRANT_TYPE

from gateway.domain.principal import SCOPES
from gateway.settings import Settings

TOKEN_PATH = "/oauth/token"  # noqa: S105 (a path, not a secret)
DEVICE_AUTHORIZATION_PATH = "/oauth/device_authorization"
VERIFICATION_PATH = "/oauth/device"
REVOCATION_PATH = "/oauth/revoke"
JWKS_PATH = "/.well-known/jwks.json"
METADATA_PATH = "/.well-known/oauth-authorization-server"
CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "none"]


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
