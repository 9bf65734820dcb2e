"""The plumbing of the gateway's REST client: one httpx client under /api/v1, responses
validated as the API's documents, errors mapped to `gateway.client.errors`, streams.
`GatewayClient` (gateway.client.api) builds its methods on `ClientBase`."""

from __future__ import annotations

import ssl
import uuid
from collections.abc import Callable, Generator, Mapping
from typing import Any, Self, TypeVar, cast
from urllib.parse import quote

import httpx
from pydantic import ValidationError

from gateway import __version__
from gateway.client.errors import (
    AuthenticationRequired,
    ClientError,
    GatewayUnreachable,
    problem_error,
    transport_reason,
)
from gateway.client.urls import DEFAULT_GATEWAY_URL, name_gateway
from gateway.schemas import parse

API_PREFIX = "/api/v1"
# Items per page when the client reads a whole list (the API allows up to 500).
PAGE_SIZE = 500

# Returns a bearer token, or None to send the request without one. It may raise
# AuthenticationRequired (not logged in, or the session expired).
TokenProvider = Callable[[], str | None]
Document = TypeVar("Document")


class _BearerAuth(httpx.Auth):
    """Asks the provider for a token on every request, so refreshes happen in time."""

    def __init__(self, provider: TokenProvider) -> None:
        self.provider = provider

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        token = self.provider()
        if token:
            request.headers["Authorization"] = f"Bearer {token}"
        yield request


class ClientBase:
    """An httpx client of the gateway's API and the requests every method makes.

    `transport` is the test seam: any `httpx.BaseTransport` (a real gateway is used
    otherwise, at `base_url`).
    """

    def __init__(self, base_url: str = DEFAULT_GATEWAY_URL,
                 token_provider: TokenProvider | None = None, *,
                 transport: httpx.BaseTransport | None = None,
                 timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url + API_PREFIX,
            auth=_BearerAuth(token_provider) if token_provider else None,
            transport=transport or _plain_http_transport(self.base_url),
            timeout=timeout,
            headers={"User-Agent": f"gridgate-client/{__version__}",
                     "Accept": "application/json, application/problem+json"},
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing -----------------------------------------------------------------------

    def _document(self, document: type[Document], method: str, path: str,
                  **kwargs: Any) -> Document:
        """The response, validated as the API's `document` (`gateway.schemas`)."""
        body = self._json(method, path, **kwargs)
        try:
            return cast(Document, parse(document, body))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "the document"
            raise ClientError(
                f"The gateway's answer to {method} {path} does not match this client's "
                f"{document.__name__} ({where}: {first['msg']}); are the client and the "
                "gateway of the same version?") from exc

    def _every_page(self, document: type[Document], path: str,
                    filters: Mapping[str, str] | None = None) -> list[Any]:
        """The items of every page of a list (each is `{items, next_cursor}`)."""
        items: list[Any] = []
        params: dict[str, str | int] = {**(filters or {}), "limit": PAGE_SIZE}
        while True:
            page = cast(dict[str, Any], self._document(document, "GET", path, params=params))
            items += page["items"]
            if not page["next_cursor"]:
                return items
            params["cursor"] = page["next_cursor"]

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._request(method, path, **kwargs)
        try:
            return response.json()
        except ValueError as exc:
            raise ClientError(f"The gateway sent a response that is not JSON for {path}.") \
                from exc

    def _request(self, method: str, path: str, *, auth: Any = httpx.USE_CLIENT_DEFAULT,
                 **kwargs: Any) -> httpx.Response:
        try:
            response = self._http.request(method, path, auth=auth, **kwargs)
        except httpx.TransportError as exc:
            raise GatewayUnreachable(self.base_url, transport_reason(exc)) from exc
        _raise_for_problem(response, self.base_url)
        return response

    def _stream(self, method: str, path: str, **kwargs: Any) -> StreamContext:
        return StreamContext(self, method, path, kwargs)


class StreamContext:
    """`with` a streaming response whose errors are already mapped."""

    def __init__(self, client: ClientBase, method: str, path: str,
                 kwargs: dict[str, Any]) -> None:
        self._client = client
        self._method = method
        self._path = path
        self._kwargs = kwargs
        self._response: httpx.Response | None = None

    def __enter__(self) -> httpx.Response:
        http = self._client._http
        request = http.build_request(self._method, self._path, timeout=httpx.Timeout(
            http.timeout.connect, read=None, write=http.timeout.write, pool=http.timeout.pool),
            **self._kwargs)
        try:
            response = http.send(request, stream=True)
        except httpx.TransportError as exc:
            raise GatewayUnreachable(self._client.base_url, transport_reason(exc)) from exc
        self._response = response
        if response.is_error:
            response.read()
            response.close()
            _raise_for_problem(response, self._client.base_url)
        return response

    def __exit__(self, *exc: object) -> None:
        if self._response is not None:
            self._response.close()


def _raise_for_problem(response: httpx.Response, gateway: str) -> None:
    if response.is_success:
        return
    if not response.is_error:
        # 1xx/3xx are not expected from this API; treat as a problem too.
        raise problem_error(response.status_code, None, response.text)
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if response.status_code in (404, 405) and not kind.endswith("json"):
        # Every error of a gridgate gateway is a problem document: this is another server.
        raise problem_error(response.status_code, {"title": "Not a gridgate gateway", "detail": (
            f"{response.request.url} answered {response.status_code} with "
            f"{kind or 'no content type'}, not a gridgate problem document: the gateway "
            "URL (--gateway or GRIDGATE_URL) points at another web server.")})
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if response.status_code == 401:
        detail = body.get("detail") if isinstance(body, dict) else None
        text = "The gateway did not accept your token"
        if isinstance(detail, str) and detail:
            text += f": {detail}"
        if "gridgate login" not in text:
            text += "; run 'gridgate login'"
        text = name_gateway(text, gateway)
        raise AuthenticationRequired(text if text.endswith(".") else text + ".")
    raise problem_error(response.status_code, body, response.text)


def _plain_http_transport(base_url: str) -> httpx.BaseTransport | None:
    """For an http:// gateway, a transport that skips loading the CA bundle (httpx loads it
    for every client: a third of a CLI command's start-up). TLS stays verified: its context
    trusts no authority, so an https connection would be refused, never trusted."""
    if not base_url.lower().startswith("http://"):
        return None
    return httpx.HTTPTransport(verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))


def is_job_id(text: str) -> bool:
    try:
        return str(uuid.UUID(text)) == text
    except ValueError:
        return False


def segment(value: str) -> str:
    # A job id is one path segment: never let user input add or climb segments.
    if not value or "/" in value or value in (".", ".."):
        raise ClientError(f"{value!r} is not a job id.")
    return value


def name_segment(value: str) -> str:
    # A project or user name is one path segment, quoted: never a way to climb the path.
    if not value or "/" in value or value in (".", ".."):
        raise ClientError(f"{value!r} is not a project or user name.")
    return quote(value, safe="~")


def int_header(response: httpx.Response, name: str, default: int) -> int:
    try:
        return int(response.headers[name])
    except (KeyError, ValueError):
        return default


