"""The OAuth 2.0 calls the CLI makes to the gateway's built-in authorization server.

Device authorization (RFC 8628) for people, client credentials for automation,
refresh tokens to stay logged in, and revocation (RFC 7009) on logout. Endpoints are
taken relative to the gateway URL the user gave, so a token is never sent to a host
named by a document fetched from the network.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from gateway.client.errors import ClientError, GatewayUnreachable, transport_reason

CLI_CLIENT_ID = "gridgate-cli"
DEFAULT_SCOPE = "jobs:read jobs:write sites:read"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


class OAuthError(ClientError):
    """The authorization server refused a request (RFC 6749 §5.2 error response)."""

    def __init__(self, error: str, description: str | None = None, status: int = 400) -> None:
        super().__init__(_explain(error, description))
        self.error = error
        self.description = description
        self.status = status


def _explain(error: str, description: str | None) -> str:
    hints = {
        "access_denied": "The login request was denied.",
        "expired_token": "The code expired before it was approved; run 'gridgate login' again.",
        "invalid_client": "The gateway does not accept this client id or secret.",
        "invalid_grant": "Your session has expired; run 'gridgate login'.",
        "invalid_scope": "The requested scope is not allowed for this client.",
    }
    text = hints.get(error, f"The authorization server refused the request ({error}).")
    return f"{text} {description}" if description and error not in ("invalid_grant",) else text


@dataclass(frozen=True)
class TokenResponse:
    """A successful token endpoint answer."""

    access_token: str
    expires_in: int | None
    refresh_token: str | None
    scope: str | None
    token_type: str

    @property
    def expires_at(self) -> float | None:
        return time.time() + self.expires_in if self.expires_in is not None else None


@dataclass(frozen=True)
class DeviceAuthorization:
    """What RFC 8628 §3.2 returns: show `user_code` and `verification_uri` to the person."""

    device_code: str
    user_code: str
    verification_uri: str
    verification_uri_complete: str | None
    expires_in: int
    interval: int


class AuthorizationServer:
    """The gateway's OAuth endpoints, at the root of `gateway_url`."""

    def __init__(self, gateway_url: str, *, transport: httpx.BaseTransport | None = None,
                 timeout: float = 30.0) -> None:
        self.gateway_url = gateway_url.rstrip("/")
        self._http = httpx.Client(transport=transport, timeout=timeout,
                                  headers={"Accept": "application/json"})

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> AuthorizationServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def token_endpoint(self) -> str:
        return f"{self.gateway_url}/oauth/token"

    def metadata(self) -> dict[str, Any]:
        """RFC 8414 metadata; empty when the gateway does not publish it."""
        url = f"{self.gateway_url}/.well-known/oauth-authorization-server"
        response = self._send("GET", url)
        if response.status_code != 200:
            return {}
        body = _json(response)
        return body if isinstance(body, dict) else {}

    def device_authorization(self, client_id: str = CLI_CLIENT_ID,
                             scope: str = DEFAULT_SCOPE) -> DeviceAuthorization:
        """Start a device login (RFC 8628 §3.1)."""
        body = self._form(f"{self.gateway_url}/oauth/device_authorization",
                          {"client_id": client_id, "scope": scope})
        try:
            return DeviceAuthorization(
                device_code=str(body["device_code"]),
                user_code=str(body["user_code"]),
                verification_uri=str(body["verification_uri"]),
                verification_uri_complete=(str(body["verification_uri_complete"])
                                           if body.get("verification_uri_complete") else None),
                expires_in=int(body.get("expires_in", 600)),
                interval=int(body.get("interval", 5)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ClientError(f"The gateway sent an unusable device authorization: {exc}") from exc

    def poll_device_token(
        self, grant: DeviceAuthorization, client_id: str = CLI_CLIENT_ID, *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> TokenResponse:
        """Poll the token endpoint until the person approves, honouring `interval`
        and `slow_down` (RFC 8628 §3.5)."""
        interval = max(1, grant.interval)
        deadline = clock() + grant.expires_in
        while True:
            sleep(interval)
            try:
                return self._token({"grant_type": DEVICE_GRANT, "device_code": grant.device_code,
                                    "client_id": client_id})
            except OAuthError as exc:
                if exc.error == "authorization_pending":
                    pass
                elif exc.error == "slow_down":
                    interval += 5
                else:
                    raise
            if clock() >= deadline:
                raise OAuthError("expired_token")

    def client_credentials(self, client_id: str, client_secret: str,
                           scope: str | None = None) -> TokenResponse:
        """A token for a confidential client (RFC 6749 §4.4), authenticated with HTTP Basic."""
        data = {"grant_type": "client_credentials"}
        if scope:
            data["scope"] = scope
        return self._token(data, auth=(client_id, client_secret))

    def refresh(self, refresh_token: str, client_id: str = CLI_CLIENT_ID,
                token_endpoint: str | None = None) -> TokenResponse:
        """Trade a refresh token for a new access token (and a rotated refresh token)."""
        return self._token({"grant_type": "refresh_token", "refresh_token": refresh_token,
                            "client_id": client_id}, url=token_endpoint)

    def revoke(self, token: str, hint: str, client_id: str = CLI_CLIENT_ID) -> None:
        """Revoke a token (RFC 7009); the server answers 200 even for unknown tokens."""
        self._form(f"{self.gateway_url}/oauth/revoke",
                   {"token": token, "token_type_hint": hint, "client_id": client_id})

    def _token(self, data: dict[str, str], *, auth: tuple[str, str] | None = None,
               url: str | None = None) -> TokenResponse:
        body = self._form(url or self.token_endpoint, data, auth=auth)
        try:
            expires_in = body.get("expires_in")
            return TokenResponse(
                access_token=str(body["access_token"]),
                expires_in=int(expires_in) if expires_in is not None else None,
                refresh_token=str(body["refresh_token"]) if body.get("refresh_token") else None,
                scope=str(body["scope"]) if body.get("scope") else None,
                token_type=str(body.get("token_type", "Bearer")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ClientError(f"The gateway sent an unusable token response: {exc}") from exc

    def _form(self, url: str, data: dict[str, str], *,
              auth: tuple[str, str] | None = None) -> dict[str, Any]:
        response = self._send("POST", url, data=data, auth=auth)
        body = _json(response)
        if response.is_success:
            return body if isinstance(body, dict) else {}
        if isinstance(body, dict) and isinstance(body.get("error"), str):
            description = body.get("error_description")
            raise OAuthError(body["error"], description if isinstance(description, str)
                             else None, response.status_code)
        detail = body.get("detail") if isinstance(body, dict) else None
        raise OAuthError("server_error", str(detail or response.reason_phrase),
                         response.status_code)

    def _send(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(method, url, **kwargs)
        except httpx.TransportError as exc:
            raise GatewayUnreachable(self.gateway_url, transport_reason(exc)) from exc


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None

