"""GET /dashboard: the committee dashboard, server-rendered HTML with inline SVG charts
(burn-down of each allocation against its award, usage by site and by user); no script.

Behind login. A person signs in on the page itself with their gridgate username and
password (the same check, throttle and CSRF rules as the device-login page); the gateway
then keeps a read-only access token (scope `jobs:read`, the usual lifetime) in an
HttpOnly, SameSite=Strict cookie scoped to /dashboard; signing out (a form with the same
CSRF rule) revokes that token. A client with a token from `gridgate login` may instead
send it as `Authorization: Bearer`. Either way the page shows exactly what the report API
shows that caller (gateway.services.money.reports).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool

from gateway.accounting.units import su
from gateway.api import browser_signin, charts
from gateway.api.browser_signin import Refused, csrf_matches, new_csrf, read_form
from gateway.api.deps import RuntimeDep
from gateway.api.http.client_address import is_secure
from gateway.auth.project_access import visible_projects
from gateway.domain.errors import GatewayError, Invalid, NotFound, Unauthenticated
from gateway.domain.principal import Principal
from gateway.runtime import Runtime
from gateway.services.money import reports
from gateway.services.money.reports import Period

router = APIRouter(tags=["dashboard"])

PATH = "/dashboard"
LOGIN_PATH = "/dashboard/login"
LOGOUT_PATH = "/dashboard/logout"
SESSION_COOKIE = "gridgate_dashboard"
CSRF_COOKIE = "gridgate_dashboard_csrf"
SCOPE = "jobs:read"
_CSRF_TOKEN = re.compile(r"[A-Za-z0-9_-]{43}")  # secrets.token_urlsafe(32)
_HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; "
                               "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_templates = Environment(
    loader=FileSystemLoader(Path(__file__).resolve().parent.parent / "templates"),
    autoescape=select_autoescape(["html"], default_for_string=True, default=True),
)
_templates.filters["su"] = lambda value: su(round(float(value) * 1000))
CHART_W, CHART_H, BAR_W, BAR_ROW = 360.0, 120.0, 260.0, 22.0


def _set_csrf(runtime: Runtime, response: Response, csrf: str) -> None:
    browser_signin.set_csrf_cookie(runtime, response, CSRF_COOKIE, PATH, csrf)


def _login_page(runtime: Runtime, status: int, error: str | None = None,
                username: str = "") -> HTMLResponse:
    csrf = new_csrf()
    html = _templates.get_template("dashboard.html").render(
        state="login", action=LOGIN_PATH, csrf_token=csrf, error=error, username=username)
    response = HTMLResponse(html, status_code=status, headers=_HEADERS)
    _set_csrf(runtime, response, csrf)
    return response


def _token(request: Request) -> str | None:
    scheme, _, value = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    return request.cookies.get(SESSION_COOKIE) or None


def _burn_down(row: dict[str, Any], points: list[tuple[int, float]], as_of: datetime
               ) -> dict[str, Any]:
    """The chart of one allocation: remaining SU by day against an even spend of its
    award from its start to its end, and where `as_of` falls."""
    days = max(math.ceil((row["ends_at"] - row["starts_at"]) / timedelta(days=1)), 1)
    today = min(max((as_of - row["starts_at"]) / timedelta(days=1), 0.0), float(days))
    line = charts.steps(0.0, points, math.ceil(today))
    top = max([row["awarded_su"], *(v for _, v in line)]) or 1.0
    frame = charts.Frame(CHART_W, CHART_H, 0.0, float(days), top)
    return {"remaining": frame.polyline(line),
            "even": frame.polyline([(0.0, row["awarded_su"]), (float(days), 0.0)]),
            "today_x": frame.point(today, 0)[0], "width": CHART_W, "height": CHART_H}


def _usage_chart(report: dict[str, Any]) -> dict[str, Any]:
    found = charts.bars([(r["key"], r["net_su"]) for r in report["rows"]], BAR_W, BAR_ROW)
    return {"bars": found, "height": max(len(found), 1) * BAR_ROW, "width": BAR_W}


def _render(runtime: Runtime, principal: Principal, project: str | None,
            as_of: datetime | None, csrf: str) -> HTMLResponse:
    now = runtime.clock()
    period = Period(as_of=as_of)
    with runtime.readers() as session:
        projects = [a.project.name for a in visible_projects(session, principal)]
        allocs = reports.allocation_report(session, principal, project, period, 30, now)
        by_site = reports.usage_report(session, principal, "site", project, period, now)
        by_user = reports.usage_report(session, principal, "user", project, period, now)
        series = reports.daily_available(session, principal, project, period, now)
    rows = [dict(row, chart=_burn_down(dict(row), series.get(row["id"], []),
                                        allocs["as_of"])) for row in allocs["allocations"]]
    html = _templates.get_template("dashboard.html").render(
        state="report", who=principal.display, project=project or "", projects=projects,
        as_of=allocs["as_of"], as_of_given=as_of is not None, allocations=rows,
        by_site=by_site, by_user=by_user, site_chart=_usage_chart(dict(by_site)),
        user_chart=_usage_chart(dict(by_user)), logout=LOGOUT_PATH, csrf_token=csrf,
        basis={"allocations": allocs["basis"], "usage": by_site["basis"]})
    return HTMLResponse(html, headers=_HEADERS)


def _error_page(status: int, message: str) -> HTMLResponse:
    html = _templates.get_template("dashboard.html").render(state="error", error=message,
                                                              back=PATH)
    return HTMLResponse(html, status_code=status, headers=_HEADERS)


@router.get(PATH, response_class=HTMLResponse)
def dashboard(request: Request, runtime: RuntimeDep,
              project: Annotated[str | None, Query(max_length=64)] = None,
              as_of: Annotated[str | None, Query(max_length=64)] = None) -> Response:
    """The committee dashboard (a sign-in form until the caller is signed in)."""
    token = _token(request)
    if token is None:
        return _login_page(runtime, 401)
    try:
        principal = runtime.authenticator.authenticate(token)
    except Unauthenticated:
        page = _login_page(runtime, 401, "Your session has ended; please sign in again.")
        page.delete_cookie(SESSION_COOKIE, path=PATH)
        return page
    if SCOPE not in principal.scopes:
        return _error_page(403, f"This needs a token with the '{SCOPE}' scope.")
    try:
        when = datetime.fromisoformat(as_of.strip()) if as_of and as_of.strip() else None
    except ValueError:
        return _error_page(400, f"'{as_of}' is not a time; write it as 2026-10-01T00:00:00Z "
                                "(a time without a zone is UTC).")
    if when is not None and when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    # The sign-out form's token: the one this browser holds already (if it is one of
    # ours), so that every open tab of the dashboard can sign out.
    csrf = request.cookies.get(CSRF_COOKIE, "")
    if not _CSRF_TOKEN.fullmatch(csrf):
        csrf = new_csrf()
    try:
        page = _render(runtime, principal, project or None, when, csrf)
    except NotFound as exc:
        return _error_page(404, exc.detail)
    except Invalid as exc:
        return _error_page(400, exc.detail)
    _set_csrf(runtime, page, csrf)
    return page


@router.post(LOGIN_PATH, response_class=HTMLResponse)
async def login(request: Request, runtime: RuntimeDep) -> Response:
    """Sign in with a gridgate username and password; the session is a read-only token."""
    if not is_secure(request, runtime.settings):
        return _login_page(runtime, 400, "Use https: this form takes a password.")
    try:
        form = await read_form(request)
    except GatewayError as exc:
        return _login_page(runtime, 400, exc.detail)
    username = form.get("username", "")[:64]
    if not csrf_matches(request, CSRF_COOKIE, form):
        return _login_page(runtime, 403, "This form expired or was sent from another site; "
                                         "please sign in again.", username)
    token = await run_in_threadpool(browser_signin.sign_in, runtime, request, username,
                                    form.get("password", ""), client_id="dashboard",
                                    scope=SCOPE)
    if isinstance(token, Refused):
        page = _login_page(runtime, token.status, token.message, username)
        if token.retry_after is not None:
            page.headers["Retry-After"] = str(token.retry_after)
        return page
    response = RedirectResponse(PATH, status_code=303, headers=_HEADERS)
    response.set_cookie(SESSION_COOKIE, token.token, httponly=True, samesite="strict",
                        path=PATH, secure=browser_signin.secure_cookies(runtime),
                        max_age=token.expires_in)
    response.delete_cookie(CSRF_COOKIE, path=PATH)
    return response


@router.post(LOGOUT_PATH)
async def logout(request: Request, runtime: RuntimeDep) -> Response:
    """Sign out: the session's token is revoked (refused everywhere from now on, the API
    included) and its cookie deleted. Only the dashboard's own form may ask (its CSRF
    token), so another site cannot sign a person out."""
    try:
        form = await read_form(request)
    except GatewayError as exc:
        return _error_page(400, exc.detail)
    if not csrf_matches(request, CSRF_COOKIE, form):
        return _error_page(403, "This sign-out did not come from the dashboard page (it "
                                "expired, or another site sent it); you are still signed "
                                "in. Open the dashboard and sign out there.")
    token = request.cookies.get(SESSION_COOKIE)
    if token:
        await run_in_threadpool(runtime.authenticator.revoke, token)
    response = RedirectResponse(PATH, status_code=303, headers=_HEADERS)
    response.delete_cookie(SESSION_COOKIE, path=PATH)
    response.delete_cookie(CSRF_COOKIE, path=PATH)
    return response
