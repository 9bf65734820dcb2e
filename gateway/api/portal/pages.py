"""The portal's pages: sign-in and sign-out, and one small HTML document per page whose
scripts fill it from the API (gateway.api.portal). A page behind sign-in sends a person
without a session to the sign-in form and back; a job or workflow the person may not see
is a 404 page, the same as one that does not exist."""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.concurrency import run_in_threadpool

from gateway.api import browser_signin
from gateway.api.browser_signin import Refused, csrf_matches, new_csrf, read_form
from gateway.api.deps import RuntimeDep
from gateway.api.http.client_address import is_secure
from gateway.api.portal import assets, session
from gateway.domain.errors import GatewayError, NotFound, Unauthenticated
from gateway.domain.principal import Principal
from gateway.domain.states import JobState
from gateway.runtime import Runtime
from gateway.services.jobs import queries as job_queries
from gateway.services.workflows import queries as workflow_queries

router = APIRouter(include_in_schema=False)

HOME = "/portal/jobs"
LOGIN_PATH = "/portal/login"
LOGOUT_PATH = "/portal/logout"
# The sign-in form's own CSRF cookie (before there is a session to derive one from).
LOGIN_CSRF_COOKIE = "gridgate_portal_login"
# Where a person goes after signing in: a portal page, never another site.
_NEXT = re.compile(r"/portal(/[A-Za-z0-9._~/-]*)?(\?[A-Za-z0-9._~%&=+:,-]*)?")
HEADERS = {
    "Cache-Control": "no-store",
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
                               "connect-src 'self'; img-src 'self' data:; form-action 'self'; "
                               "frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
_templates = Environment(
    loader=FileSystemLoader(Path(__file__).resolve().parent / "templates"),
    autoescape=select_autoescape(["html"], default_for_string=True, default=True),
)
_templates.globals["asset"] = assets.url


def _next_of(wanted: str | None) -> str:
    return wanted if wanted and _NEXT.fullmatch(wanted) and "//" not in wanted else HOME


def _render(template: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = _templates.get_template(template).render(**context)
    return HTMLResponse(html, status_code=status, headers=HEADERS)


def _login_page(runtime: Runtime, status: int, next_page: str, error: str | None = None,
                username: str = "") -> HTMLResponse:
    csrf = new_csrf()
    page = _render("login.html", status, title="Sign in", action=LOGIN_PATH, csrf_token=csrf,
                   error=error, username=username, next_page=next_page)
    browser_signin.set_csrf_cookie(runtime, page, LOGIN_CSRF_COOKIE, LOGIN_PATH, csrf)
    return page


def _to_login(request: Request, ended: bool = False) -> Response:
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    query = {"next": _next_of(here), **({"ended": "1"} if ended else {})}
    response = RedirectResponse(f"{LOGIN_PATH}?{urlencode(query, safe='/', quote_via=quote)}",
                                status_code=303, headers=HEADERS)
    if ended:
        response.delete_cookie(session.COOKIE, path="/")
    return response


def _signed_in(request: Request, runtime: Runtime) -> tuple[Principal, str] | None:
    token = request.cookies.get(session.COOKIE)
    if not token:
        return None
    try:
        return runtime.authenticator.authenticate(token), token
    except Unauthenticated:
        return None


async def _page(request: Request, runtime: Runtime, template: str, title: str, nav: str,
                check: Callable[[Principal], None] | None = None,
                **context: Any) -> Response:
    """A page behind sign-in: the sign-in form for a person without a session, a 404 page
    when `check` says NotFound, else `template` with the session's CSRF token."""
    found = await run_in_threadpool(_signed_in, request, runtime)
    if found is None:
        return _to_login(request, ended=session.COOKIE in request.cookies)
    principal, token = found
    base: dict[str, Any] = {"who": principal.display, "csrf": session.csrf_token(token),
                            "nav": nav, "logout": LOGOUT_PATH}
    if check is not None:
        try:
            await run_in_threadpool(check, principal)
        except NotFound as exc:
            return _render("not_found.html", 404, title="Not found", message=exc.detail,
                           **base)
    return _render(template, title=title, **base, **context)


@router.get("/portal")
def portal_home() -> Response:
    return RedirectResponse(HOME, status_code=303, headers=HEADERS)


@router.get(LOGIN_PATH, response_class=HTMLResponse)
async def login_form(request: Request, runtime: RuntimeDep, next: str | None = None,
                     ended: str | None = None) -> Response:
    """The sign-in form (straight on to `next` for a person signed in already)."""
    next_page = _next_of(next)
    if await run_in_threadpool(_signed_in, request, runtime) is not None:
        return RedirectResponse(next_page, status_code=303, headers=HEADERS)
    error = "Your session has ended; please sign in again." if ended else None
    return _login_page(runtime, 200, next_page, error)


@router.post(LOGIN_PATH, response_class=HTMLResponse)
async def login(request: Request, runtime: RuntimeDep) -> Response:
    """Sign in with a gridgate username and password; the session is an access token for
    what a researcher does (session.SCOPE) in an HttpOnly cookie the API accepts."""
    if not is_secure(request, runtime.settings):
        return _login_page(runtime, 400, HOME, "Use https: this form takes a password.")
    try:
        form = await read_form(request)
    except GatewayError as exc:
        return _login_page(runtime, 400, HOME, exc.detail)
    username = form.get("username", "")[:64]
    next_page = _next_of(form.get("next"))
    if not csrf_matches(request, LOGIN_CSRF_COOKIE, form):
        return _login_page(runtime, 403, next_page, "This form expired or was sent from "
                                                    "another site; please sign in again.",
                           username)
    token = await run_in_threadpool(browser_signin.sign_in, runtime, request, username,
                                    form.get("password", ""), client_id="portal",
                                    scope=session.SCOPE)
    if isinstance(token, Refused):
        page = _login_page(runtime, token.status, next_page, token.message, username)
        if token.retry_after is not None:
            page.headers["Retry-After"] = str(token.retry_after)
        return page
    response = RedirectResponse(next_page, status_code=303, headers=HEADERS)
    # Path /: the API (/api/v1) takes the same cookie, for the pages' scripts.
    response.set_cookie(session.COOKIE, token.token, httponly=True, samesite="strict",
                        path="/", secure=browser_signin.secure_cookies(runtime),
                        max_age=token.expires_in)
    response.delete_cookie(LOGIN_CSRF_COOKIE, path=LOGIN_PATH)
    return response


@router.post(LOGOUT_PATH)
async def logout(request: Request, runtime: RuntimeDep) -> Response:
    """Sign out: the session's token is revoked (refused by the API from now on) and its
    cookie deleted. Only a portal page's form may ask (the session's CSRF token)."""
    token = request.cookies.get(session.COOKIE, "")
    try:
        form = await read_form(request)
    except GatewayError as exc:
        form = {"error": exc.detail}
    if not token or not hmac.compare_digest(form.get("csrf_token", "").encode(),
                                            session.csrf_token(token).encode()):
        return _render("message.html", 403, title="Not signed out",
                       message="This sign-out did not come from a portal page (it expired, "
                               "or another site sent it). Open the portal and sign out there.")
    await run_in_threadpool(runtime.authenticator.revoke, token)
    response = RedirectResponse(LOGIN_PATH, status_code=303, headers=HEADERS)
    response.delete_cookie(session.COOKIE, path="/")
    return response


@router.get("/portal/jobs", response_class=HTMLResponse)
async def jobs_page(request: Request, runtime: RuntimeDep) -> Response:
    """The jobs list: filters, paging, rows that follow the event stream."""
    return await _page(request, runtime, "jobs.html", "Jobs", "jobs", script="jobs.js",
                       states=[state.value for state in JobState])


@router.get("/portal/jobs/{job_id}", response_class=HTMLResponse)
async def job_page(job_id: str, request: Request, runtime: RuntimeDep) -> Response:
    """One job: state, placement, attempts, events, log, outputs, actions."""
    def visible(principal: Principal) -> None:
        with runtime.reading() as conn:
            job_queries.ensure_readable(conn, principal, job_id)

    return await _page(request, runtime, "job.html", "Job", "jobs", check=visible,
                       script="job.js", job_id=job_id)


@router.get("/portal/submit", response_class=HTMLResponse)
async def submit_page(request: Request, runtime: RuntimeDep) -> Response:
    """Submit: the form from the job-spec schema, uploads, where and when."""
    return await _page(request, runtime, "submit.html", "Submit a job", "submit",
                       script="submit.js")


@router.get("/portal/workflows", response_class=HTMLResponse)
async def workflows_page(request: Request, runtime: RuntimeDep) -> Response:
    """The workflows list."""
    return await _page(request, runtime, "workflows.html", "Workflows", "workflows",
                       script="workflows.js")


@router.get("/portal/workflows/{workflow_id}", response_class=HTMLResponse)
async def workflow_page(workflow_id: str, request: Request, runtime: RuntimeDep) -> Response:
    """One workflow: its graph of steps, live, and each instance's job."""
    def visible(principal: Principal) -> None:
        with runtime.reading() as conn:
            workflow_queries.visible(conn, principal, workflow_id)

    return await _page(request, runtime, "workflow.html", "Workflow", "workflows",
                       check=visible, script="workflow.js", workflow_id=workflow_id)


@router.get("/portal/sites", response_class=HTMLResponse)
async def sites_page(request: Request, runtime: RuntimeDep) -> Response:
    """Sites (load, state, bans and why) and the person's projects' money."""
    return await _page(request, runtime, "sites.html", "Sites and money", "sites",
                       script="sites.js")


@router.get(assets.PREFIX + "{name}")
def static_asset(name: str, request: Request, v: str | None = None) -> Response:
    """A script or the style sheet (gzip-compressed when the browser takes it)."""
    asset = assets.assets().get(name)
    if asset is None:
        raise NotFound(f"No portal asset '{name}'.")
    headers = {"ETag": f'"{asset.digest}"', "X-Content-Type-Options": "nosniff",
               "Vary": "Accept-Encoding",
               "Cache-Control": ("public, max-age=31536000, immutable" if v == asset.digest
                                 else "no-cache")}
    if request.headers.get("if-none-match") == headers["ETag"]:
        return Response(status_code=304, headers=headers)
    if "gzip" in request.headers.get("accept-encoding", ""):
        headers["Content-Encoding"] = "gzip"
        return Response(asset.gzipped, media_type=asset.media_type, headers=headers)
    return Response(asset.body, media_type=asset.media_type, headers=headers)
