"""Signing a person in on a gateway web page (the committee dashboard, the portal) with
their gridgate username and password: the form's CSRF rule, the login throttle, and the
session's access token. Each page keeps the token in an HttpOnly, SameSite=Strict cookie
of its own; signing out revokes it."""

from __future__ import annotations

import math
import secrets
from dataclasses import dataclass
from urllib.parse import parse_qsl

from fastapi import Request
from fastapi.responses import Response

from gateway.api.http.client_address import client_address
from gateway.auth.accounts import verify_password
from gateway.auth.login_throttle import (
    LoginLimits,
    record_failure,
    record_success,
    retry_after,
)
from gateway.auth.tokens import AccessToken, issue_access_token
from gateway.domain.errors import Invalid
from gateway.runtime import Runtime

MAX_FORM_BYTES = 4096


@dataclass(frozen=True)
class Refused:
    """Why a sign-in failed: the status, the message for the person, and for a throttled
    one the seconds to wait (Retry-After)."""

    status: int
    message: str
    retry_after: int | None = None


def new_csrf() -> str:
    return secrets.token_urlsafe(32)


def secure_cookies(runtime: Runtime) -> bool:
    return runtime.settings.public_url.startswith("https://")


def set_csrf_cookie(runtime: Runtime, response: Response, name: str, path: str,
                    csrf: str) -> None:
    """Put `csrf` in its strict cookie: a form posted back must carry the same value,
    which a page of another site can neither read nor make the browser send."""
    response.set_cookie(name, csrf, httponly=True, samesite="strict", path=path,
                        secure=secure_cookies(runtime), max_age=3600)


def csrf_matches(request: Request, cookie_name: str, form: dict[str, str]) -> bool:
    cookie = request.cookies.get(cookie_name, "")
    return bool(cookie) and secrets.compare_digest(cookie.encode(),
                                                   form.get("csrf_token", "").encode())


async def read_form(request: Request) -> dict[str, str]:
    """A small urlencoded form; Invalid when too large or not UTF-8."""
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise Invalid("The form is too large.")
    try:
        return dict(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    except (UnicodeDecodeError, ValueError) as exc:
        raise Invalid("The form is not valid UTF-8 form data.") from exc


def sign_in(runtime: Runtime, request: Request, username: str, password: str, *,
            client_id: str, scope: str) -> AccessToken | Refused:
    """Check the password under the login throttle; on success, an access token with
    `scope` for the page `client_id` (blocking: call it on the thread pool)."""
    limits = LoginLimits.from_settings(runtime.settings)
    peer = limits.address(client_address(request))
    with runtime.unit_of_work() as session:
        now = runtime.clock()
        account = limits.account(username)
        wait = retry_after(session, limits, (account, peer), now)
        if wait is not None:
            return Refused(429, "Too many failed attempts; try again in "
                                f"{math.ceil(wait / 60)} minute(s).", wait)
        user = verify_password(session, username, password)
        if user is None:
            record_failure(session, limits, (account, peer), now)
            return Refused(400, "Wrong username or password.")
        if user.disabled:
            return Refused(403, "This account is disabled.")
        record_success(session, account)
        user_id, name = user.id, user.username
    return issue_access_token(runtime.settings, runtime.keys, subject=user_id,
                              client_id=client_id, scope=scope, username=name)
