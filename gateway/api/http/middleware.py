"""Pure ASGI middleware: body size cap and request metrics (cheap on the hot path)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gateway.api.problems import send_problem
from gateway.metrics import Metrics


class _BodyTooLarge(Exception):
    pass


async def _send_413(send: Send, limit: int) -> None:
    await send_problem(send, 413, f"The request body is larger than the limit of {limit} bytes.",
                       title="Content Too Large")


class BodyLimit:
    """Refuse request bodies over `limit` bytes, declared or streamed. Requests for which
    `exempt(scope)` is true (upload chunks, which stream to disk) enforce their own."""

    def __init__(self, app: ASGIApp, limit: int,
                 exempt: Callable[[Scope], bool] | None = None) -> None:
        self.app, self.limit, self.exempt = app, limit, exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (self.exempt is not None and self.exempt(scope)):
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                await _send_413(send, self.limit)
                return
        received = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:
                raise _BodyTooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except _BodyTooLarge:
            if not started:
                await _send_413(send, self.limit)


class RequestMetrics:
    """Count requests by route template and status, and time them."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app, self.metrics = app, metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500
        start = time.perf_counter()

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            route: Any = scope.get("route")
            template = getattr(route, "path", None) or "unmatched"
            self.metrics.http_requests.labels(scope["method"], template, str(status)).inc()
            self.metrics.http_latency.labels(template).observe(time.perf_counter() - start)
