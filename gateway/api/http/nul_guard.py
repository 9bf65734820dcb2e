"""Refuse NUL characters in request text before any route sees it.

PostgreSQL text cannot hold U+0000 (psycopg refuses to send it, which surfaced as a 500);
no name, label, path, key or id the gateway knows has a use for one. This is the single
place that checks: the URL path, query parameters, headers, and JSON or form bodies.
The common case costs a few substring tests; the request is parsed only to name the
field once a NUL may be present.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import parse_qsl

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.api.problems import send_problem

NUL = "\x00"
_JSON_NUL = b"\\u0000"  # the only way JSON text can carry one
_FORM_NUL = b"%00"


def _content_type(scope: Scope) -> str:
    headers: list[tuple[bytes, bytes]] = scope["headers"]
    for name, value in headers:
        if name == b"content-type":
            return value.decode("latin-1").split(";")[0].strip().lower()
    return ""


def _is_json(ctype: str) -> bool:
    return ctype == "application/json" or ctype.endswith("+json")


def _json_field(value: Any, path: str) -> str | None:
    """Where in a decoded JSON document a string (or key) holds a NUL, `a.b[2]` style."""
    if isinstance(value, str):
        return (path or "body") if NUL in value else None
    if isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            if NUL in key:
                return where.replace(NUL, "\\u0000")
            found = _json_field(item, where)
            if found:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = _json_field(item, f"{path}[{index}]")
            if found:
                return found
    return None


def _pairs_field(raw: bytes) -> str | None:
    """The first parameter of a query string or form body whose name or value has a NUL."""
    for key, value in parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True):
        if NUL in key or NUL in value:
            return key.replace(NUL, "\\u0000")
    return None


class RejectNul:
    """A 422 problem naming the field for any request text carrying U+0000."""

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute],
                 stream_body: Callable[[Scope], bool]) -> None:
        # The routes, to name a path parameter (`upload_id`) rather than "path".
        self.app, self.routes = app, routes
        # Requests whose body streams to disk past the body limit (upload chunks): never
        # buffered here, whatever content type they claim.
        self.stream_body = stream_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        field = self._field_outside_body(scope)
        if field is not None:
            await _refuse(scope, send, field)
            return
        ctype = _content_type(scope)
        marker = (_JSON_NUL if _is_json(ctype)
                  else _FORM_NUL if ctype == "application/x-www-form-urlencoded" else None)
        if marker is None or self.stream_body(scope):
            await self.app(scope, receive, send)
            return
        body, receive = await _buffer(receive)
        if marker in body or b"\x00" in body:
            field = _body_field(body, marker)
            if field is not None:
                await _refuse(scope, send, field)
                return
        await self.app(scope, receive, send)

    def _field_outside_body(self, scope: Scope) -> str | None:
        if NUL in scope["path"]:
            return self._path_field(scope)
        query: bytes = scope["query_string"]
        if _FORM_NUL in query or b"\x00" in query:
            found = _pairs_field(query)
            if found is not None:
                return found
        headers: list[tuple[bytes, bytes]] = scope["headers"]
        for name, value in headers:
            if b"\x00" in value or b"\x00" in name:
                return name.decode("latin-1").replace(NUL, "\\u0000")
        return None

    def _path_field(self, scope: Scope) -> str:
        for route in self.routes:
            match, child = route.matches(scope)
            if match != Match.NONE:
                for name, value in child.get("path_params", {}).items():
                    if NUL in str(value):
                        return str(name)
        return "path"


def _body_field(body: bytes, marker: bytes) -> str | None:
    if marker == _FORM_NUL:
        return _pairs_field(body)
    try:
        document = json.loads(body)
    except (ValueError, RecursionError):
        return None  # not JSON: the route's own parsing answers with a 422
    return _json_field(document, "")


async def _buffer(receive: Receive) -> tuple[bytes, Receive]:
    """The whole body (BodyLimit, outside this middleware, caps its size) and a receive
    that replays it, then hands over to the real one (to see a disconnect)."""
    chunks = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break  # the client went away: the route sees that disconnect
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            message = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            break
    pending = [message]

    async def replay() -> Message:
        return pending.pop() if pending else await receive()

    return b"".join(chunks), replay


async def _refuse(scope: Scope, send: Send, field: str) -> None:
    message = "contains a NUL character (U+0000), which the gateway accepts in no text"
    await send_problem(send, 422, f"The request is invalid: {field}: {message}; remove it.",
                       title="Invalid request", instance=scope["path"], field=field,
                       errors=[{"field": field, "message": message}])
