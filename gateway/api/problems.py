"""RFC 9457 problem details: every error the API returns goes through here.

Adapter errors (adapters/errors.py draws their tree) reach people as:

    CircuitOpen, ConnectionFailed, SiteUnavailable   503, Retry-After when the breaker knows
    CommandTimeout                                   504
    HostKeyMismatch                                  502, naming the site and both keys
    UnknownJob                                       404
    SubmitRejected                                   422
    InvalidCommand                                   500 (our bug: logged as an incident)
    any other AdapterError                           502 (the site failed to serve us)

so routes let them through instead of catching them around SSH.
"""

from __future__ import annotations

import json
import logging
import math
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from sqlalchemy.exc import OperationalError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import BaseRoute, Match
from starlette.types import Send

from adapters.errors import (
    AdapterError,
    CommandTimeout,
    ConnectionFailed,
    HostKeyMismatch,
    InvalidCommand,
    SiteUnavailable,
    SubmitRejected,
    UnknownJob,
)
from gateway.api import suggestions
from gateway.api.problem_types import BY_NAME, uri_for
from gateway.domain import errors
from gateway.domain.field_issues import FieldIssues

PROBLEM_JSON = "application/problem+json"
log = logging.getLogger(__name__)

_STATUS: dict[type[errors.GatewayError], int] = {
    errors.NotFound: 404,
    errors.Invalid: 422,
    errors.Conflict: 409,
    errors.Unauthenticated: 401,
    errors.Forbidden: 403,
    errors.Unavailable: 503,
    errors.TooLarge: 413,
}

# Most specific first: ConnectionFailed and CommandTimeout are also SiteUnavailable.
_ADAPTER_STATUS: tuple[tuple[type[AdapterError], int, str], ...] = (
    (CommandTimeout, 504, "Site timed out"),
    (SiteUnavailable, 503, "Site unavailable"),
    (HostKeyMismatch, 502, "Site host key mismatch"),
    (UnknownJob, 404, "Job unknown to the site"),
    (SubmitRejected, 422, "Rejected by the site's scheduler"),
    (AdapterError, 502, "Site error"),
)


def status_of(kind: type[Exception]) -> int:
    """The status an error of class `kind` is answered with (500: a bug)."""
    if issubclass(kind, InvalidCommand):
        return 500
    if issubclass(kind, AdapterError):
        return next(s for cls, s, _ in _ADAPTER_STATUS if issubclass(kind, cls))
    return next((s for cls, s in _STATUS.items() if issubclass(kind, cls)), 500)


def problem(
    status: int, detail: str, *, title: str | None = None, instance: str | None = None,
    headers: dict[str, str] | None = None, type_: str | None = None, **extra: Any,
) -> JSONResponse:
    """A problem+json response; its `type` names the kind of error (problem_types)."""
    body: dict[str, Any] = {
        "type": type_ or uri_for(status),
        "title": title or HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
    }
    if instance:
        body["instance"] = instance
    body.update(extra)
    return JSONResponse(body, status_code=status, media_type=PROBLEM_JSON, headers=headers)


async def send_problem(send: Send, status: int, detail: str, *, title: str | None = None,
                       headers: dict[str, str] | None = None, **extra: Any) -> None:
    """Send a problem+json response from pure ASGI middleware (before any route runs)."""
    body = json.dumps({"type": uri_for(status), "title": title or HTTPStatus(status).phrase,
                       "status": status, "detail": detail, **extra}).encode()
    raw_headers = [(b"content-type", PROBLEM_JSON.encode()),
                   (b"content-length", str(len(body)).encode())]
    raw_headers += [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw_headers})
    await send({"type": "http.response.body", "body": body})


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    # Drop the "body" prefix and pydantic's internal validator names: people want
    # "resources.walltime", not "body.resources.walltime.function-before[...]".
    # List positions read as they would in code: "inputs[1].dest".
    text = ""
    for part in loc:
        if part == "body" or "[" in str(part):
            continue
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or "body"


def _fields(request: Request, err: dict[str, Any]) -> list[dict[str, str]]:
    """The fields one pydantic error is about: a cross-field check (FieldIssues) names
    each field below the model it checked."""
    loc = tuple(err.get("loc", ()))
    issues = (err.get("ctx") or {}).get("error")
    if isinstance(issues, FieldIssues):
        return [{"field": _field((*loc, *sub)), "message": message}
                for sub, message in issues.issues]
    return [{"field": _field(loc), "message": suggestions.message(request, err)}]


def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
    fields = [field for err in exc.errors() for field in _fields(request, err)]
    summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
    return problem(422, f"The request is invalid: {summary}", title="Invalid request",
                   instance=request.url.path, errors=fields)


def _retry_after(exc: AdapterError) -> dict[str, str] | None:
    """Retry-After (whole seconds, at least 1) when the site's breaker said when."""
    retry_at = exc.retry_at if isinstance(exc, ConnectionFailed) else None
    if retry_at is None:
        return None
    seconds = (retry_at - datetime.now(UTC)).total_seconds()
    return {"Retry-After": str(max(1, math.ceil(seconds)))}


def _adapter(request: Request, exc: AdapterError) -> JSONResponse:
    status, title = next((s, t) for cls, s, t in _ADAPTER_STATUS if isinstance(exc, cls))
    detail = exc.message if exc.message.endswith(".") else f"{exc.message}."
    if exc.transient:
        detail += " Try again later."
    log.log(logging.WARNING if exc.transient else logging.ERROR, "%s %s: %s (%s)",
            request.method, request.url.path, exc.message, type(exc).__name__)
    kind = BY_NAME["site-rejected"].uri if isinstance(exc, SubmitRejected) else None
    return problem(status, detail, title=title, instance=request.url.path,
                   headers=_retry_after(exc), type_=kind)


def _incident(request: Request) -> JSONResponse:
    incident = uuid.uuid4().hex[:12]
    log.exception("unexpected error %s on %s %s", incident, request.method, request.url.path)
    return problem(500, f"Something went wrong on our side (incident {incident}); "
                   "it has been logged. Try again, or report the incident id.",
                   instance=request.url.path, incident=incident)


def allowed_methods(request: Request, routes: Sequence[BaseRoute]) -> str:
    """The Allow header for the request's path: the methods of every route on it."""
    methods: set[str] = set()
    for route in routes:
        if route.matches(request.scope)[0] != Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return ", ".join(sorted(methods))


def install(app: FastAPI, routes: Sequence[BaseRoute]) -> None:
    """Register the handlers that turn every error into problem details (`routes`: the
    app's routes, for the Allow header of a 405)."""

    @app.exception_handler(errors.GatewayError)
    async def _gateway(request: Request, exc: errors.GatewayError) -> JSONResponse:
        status = status_of(type(exc))
        headers = {"WWW-Authenticate": 'Bearer realm="gridgate"'} if status == 401 else None
        return problem(status, exc.detail, title=exc.title, instance=request.url.path,
                       headers=headers, **exc.extra)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _validation(request, exc)

    @app.exception_handler(OperationalError)
    async def _database(request: Request, exc: OperationalError) -> JSONResponse:
        log.error("database unavailable: %s", exc)
        return problem(503, "The gateway's database is unavailable; try again shortly.",
                       title="Service unavailable", instance=request.url.path,
                       headers={"Retry-After": "5"})

    @app.exception_handler(AdapterError)
    async def _site(request: Request, exc: AdapterError) -> JSONResponse:
        if isinstance(exc, InvalidCommand):
            return _incident(request)
        return _adapter(request, exc)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        return _incident(request)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail if isinstance(exc.detail, str) else HTTPStatus(exc.status_code).phrase
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:
            # Starlette names only the first route on the path; a path may have several.
            headers = {**(headers or {}), "Allow": allowed_methods(request, routes)}
        return problem(exc.status_code, detail, instance=request.url.path, headers=headers)
