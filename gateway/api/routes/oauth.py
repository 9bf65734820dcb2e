"""The built-in authorization server's HTTP endpoints (at the root, not under /api/v1).

Errors here follow RFC 6749 §5.2 (`{"error", "error_description"}`), not problem details:
OAuth clients expect that format. The grant logic is Authlib's (gateway.auth.server);
this module turns Starlette requests into `OAuthRequest`s and runs them in a worker
thread, because Authlib is synchronous and argon2 and the database block. Each request
is one unit of work, committed before its answer is built (errors included: a poll
records its time, a replayed refresh token revokes its family, a wrong client secret is
counted by the throttle of gateway.auth.login_throttle).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool

from gateway.api.deps import RuntimeDep
from gateway.api.http.client_address import client_address, is_secure
from gateway.auth.accounts import verify_password
from gateway.auth.device_approval import (
    DeviceApprovalError,
    decide_device_code,
    normalize_user_code,
    pending_device_code,
)
from gateway.auth.login_throttle import (
    LoginLimits,
    record_failure,
    record_success,
    retry_after,
)
from gateway.auth.metadata import (
    DEVICE_AUTHORIZATION_PATH,
    JWKS_PATH,
    METADATA_PATH,
    REVOCATION_PATH,
    TOKEN_PATH,
    VERIFICATION_PATH,
    server_metadata,
)
from gateway.auth.oauth_models import OAuthRequest
from gateway.auth.server import GatewayAuthorizationServer
from gateway.runtime import Runtime

router = APIRouter(tags=["oauth"])

MAX_FORM_BYTES = 16 * 1024
CSRF_COOKIE = "gridgate_device_csrf"
_NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
_PAGE_HEADERS = {
    **_NO_STORE,
    # The approval page must never be framed (clickjacking) nor run injected script.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_USE_HTTPS = ("Use https: this endpoint takes secrets, and plain http is accepted from this "
              "host only (behind a TLS proxy, set GRIDGATE_TRUST_PROXY_TLS).")
_templates = Environment(
    loader=FileSystemLoader(Path(__file__).resolve().parent.parent / "templates"),
    autoescape=select_autoescape(["html"], default_for_string=True, default=True),
)


class _FormError(Exception):
    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


def oauth_error(error: str, description: str, status: int = 400) -> JSONResponse:
    """An RFC 6749 §5.2 error response."""
    return JSONResponse({"error": error, "error_description": description},
                        status_code=status, headers=_NO_STORE)


async def _read_form(request: Request) -> dict[str, str]:
    """URL-encoded form parameters; each at most once, empty ones treated as absent."""
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    body = await request.body()
    if not body:
        return {}
    if ctype != "application/x-www-form-urlencoded":
        raise _FormError("Send the parameters as application/x-www-form-urlencoded.")
    if len(body) > MAX_FORM_BYTES:
        raise _FormError("The request body is too large.")
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=False)
    except (UnicodeDecodeError, ValueError) as exc:
        raise _FormError("The request body is not valid UTF-8 form data.") from exc
    form: dict[str, str] = {}
    for key, value in pairs:
        if key in form:
            raise _FormError(f"The parameter '{key}' is repeated.")
        form[key] = value
    # RFC 6749 §3.1: a parameter without a value is treated as omitted.
    return {k: v for k, v in form.items() if v != ""}


def _to_response(result: tuple[int, Any, Any]) -> JSONResponse:
    status, body, headers = result
    extra = {k: v for k, v in (headers or []) if k.lower() != "content-type"}
    return JSONResponse(body, status_code=status, headers={**_NO_STORE, **extra})


async def _run(
    request: Request,
    runtime: Runtime,
    path: str,
    call: Callable[[GatewayAuthorizationServer, OAuthRequest], tuple[int, Any, Any]],
) -> Response:
    if not is_secure(request, runtime.settings):
        return oauth_error("invalid_request", _USE_HTTPS)
    try:
        form = await _read_form(request)
    except _FormError as exc:
        return oauth_error("invalid_request", exc.description)
    address = client_address(request)

    def work() -> Response:
        # Errors come back as results, not exceptions: they are committed too.
        with runtime.unit_of_work() as session:
            server = GatewayAuthorizationServer(runtime.settings, runtime.keys, session,
                                                address=address, now=runtime.clock())
            oauth_request = OAuthRequest(request.method, server.url(path), form,
                                         request.headers)
            result = call(server, oauth_request)
        return _to_response(result)

    return await run_in_threadpool(work)


@router.get(METADATA_PATH)
def authorization_server_metadata(runtime: RuntimeDep) -> JSONResponse:
    """RFC 8414 metadata of the built-in authorization server."""
    return JSONResponse(server_metadata(runtime.settings),
                        headers={"Cache-Control": "public, max-age=300"})


@router.get(JWKS_PATH)
def jwks(runtime: RuntimeDep) -> JSONResponse:
    """The public keys that verify this gateway's access tokens."""
    return JSONResponse(runtime.keys.jwks(), headers={"Cache-Control": "public, max-age=300"})


@router.post(TOKEN_PATH)
async def token(request: Request, runtime: RuntimeDep) -> Response:
    """Token endpoint: device_code, client_credentials and refresh_token grants."""
    return await _run(request, runtime, TOKEN_PATH,
                      lambda server, req: server.create_token_response(req))


@router.post(DEVICE_AUTHORIZATION_PATH)
async def device_authorization(request: Request, runtime: RuntimeDep) -> Response:
    """RFC 8628 §3.1-3.2: a device code, a user code and where to enter it."""
    return await _run(request, runtime, DEVICE_AUTHORIZATION_PATH,
                      lambda server, req: server.create_endpoint_response(
                          "device_authorization", req))


@router.post(REVOCATION_PATH)
async def revoke(request: Request, runtime: RuntimeDep) -> Response:
    """RFC 7009 token revocation (refresh tokens; unknown tokens are answered 200)."""
    return await _run(request, runtime, REVOCATION_PATH,
                      lambda server, req: server.create_endpoint_response("revocation", req))


# ---------------------------------------------------------------- verification page


def _page(runtime: Runtime, status: int = 200, *, csrf: str | None = None,
          **context: Any) -> HTMLResponse:
    """Render device.html; a fresh CSRF token goes in the form and in a strict cookie."""
    token = csrf or secrets.token_urlsafe(32)
    html = _templates.get_template("device.html").render(
        action=VERIFICATION_PATH, csrf_token=token, **context)
    response = HTMLResponse(html, status_code=status, headers=_PAGE_HEADERS)
    response.set_cookie(
        CSRF_COOKIE, token, httponly=True, samesite="strict", path=VERIFICATION_PATH,
        secure=runtime.settings.public_url.startswith("https://"),
        max_age=runtime.settings.device_code_ttl_seconds,
    )
    return response


# The verification page is for a person's browser, not an API operation.
@router.get(VERIFICATION_PATH, response_class=HTMLResponse, include_in_schema=False)
def device_page(request: Request, runtime: RuntimeDep, user_code: str = "") -> HTMLResponse:
    """The page where a person enters the user code and approves the login."""
    if not is_secure(request, runtime.settings):  # before anyone types a password into it
        return _page(runtime, 400, state="form", user_code=user_code[:32], error=_USE_HTTPS)
    return _page(runtime, state="form", user_code=user_code[:32])


@router.post(VERIFICATION_PATH, response_class=HTMLResponse, include_in_schema=False)
async def device_decision(request: Request, runtime: RuntimeDep) -> HTMLResponse:
    """Approve or deny a device login with a local username and password."""
    if not is_secure(request, runtime.settings):
        return _page(runtime, 400, state="form", error=_USE_HTTPS)
    try:
        form = await _read_form(request)
    except _FormError as exc:
        return _page(runtime, 400, state="form", error=exc.description)
    user_code = form.get("user_code", "")[:32]
    username = form.get("username", "")[:64]
    cookie = request.cookies.get(CSRF_COOKIE, "")
    sent = form.get("csrf_token", "")
    if not cookie or not secrets.compare_digest(cookie.encode(), sent.encode()):
        return _page(runtime, 403, state="form", user_code=user_code, username=username,
                     error="This form expired or was sent from another site. "
                           "Please enter the code again.")
    approve = form.get("action") == "approve"
    if form.get("action") not in ("approve", "deny"):
        return _page(runtime, 400, state="form", user_code=user_code, username=username,
                     error="Choose Approve or Deny.")

    limits = LoginLimits.from_settings(runtime.settings)
    peer = limits.address(client_address(request))
    account = limits.account(username)
    typed = normalize_user_code(user_code)
    # A wrong code counts against the address and, well-formed, against itself: one code
    # tried from many addresses (until it is issued to someone) is throttled too.
    code = (limits.user_code(typed),) if typed is not None else ()

    def decide() -> HTMLResponse:
        """One unit of work: what it changed is committed before the page is sent."""
        with runtime.unit_of_work() as session:
            now = runtime.clock()
            # Before the code is looked at: a throttled guesser learns nothing about it.
            wait = retry_after(session, limits, (account, peer, *code), now)
            if wait is not None:
                page = _page(runtime, 429, state="form", user_code=user_code,
                             username=username,
                             error="Too many failed attempts for this account, this code or "
                                   "from this address. Try again in "
                                   f"{math.ceil(wait / 60)} minute(s).")
                page.headers["Retry-After"] = str(wait)
                return page
            try:
                row = pending_device_code(session, user_code)
            except DeviceApprovalError as exc:
                # A guess like a wrong password (the answer tells a live code from a dead
                # one); the account named played no part.
                record_failure(session, limits, (peer, *code), now)
                return _page(runtime, 400, state="form", user_code=user_code,
                             username=username, error=str(exc))
            user = verify_password(session, username, form.get("password", ""))
            if user is None:
                record_failure(session, limits, (account, peer), now)
                return _page(runtime, 400, state="form", user_code=user_code,
                             username=username, error="Wrong username or password.")
            if user.disabled:
                # Checked before the success is recorded: a disabled account's right
                # password clears none of its failures.
                return _page(runtime, 403, state="form", user_code=user_code,
                             username=username,
                             error="This account is disabled; ask a gateway administrator.")
            record_success(session, account)
            decide_device_code(row, user, approve)
            return _page(runtime, state="approved" if approve else "denied",
                         username=user.username, user_code=row.user_code)

    return await run_in_threadpool(decide)
