"""/docs: Swagger UI served whole by the gateway, so it works with no Internet access.

FastAPI's own page loads Swagger UI from a CDN (blank offline, and a third party sees
every visit). The assets come from the `fastapi-swagger` package, which ships the current
Swagger UI distribution; nothing is vendored here. ReDoc, which only a CDN serves, is off.
"""

from __future__ import annotations

from functools import cache
from http import HTTPStatus
from importlib import resources

from fastapi import APIRouter, Request, Response
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse, PlainTextResponse

from gateway.api.problem_types import BY_NAME, PREFIX
from gateway.domain.errors import NotFound

router = APIRouter(tags=["system"])

ASSET_PATH = "/docs/assets/"
OAUTH2_REDIRECT = "/docs/oauth2-redirect"
# The package's files the page uses, with their media types.
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "swagger-ui.css": "text/css; charset=utf-8",
    "favicon-32x32.png": "image/png",
}


@cache
def _asset(name: str) -> bytes:
    return (resources.files("fastapi_swagger.resources") / name).read_bytes()


@router.get("/docs", include_in_schema=False)
def docs(request: Request) -> HTMLResponse:
    """Swagger UI for /openapi.json, with an Authorize button for the gateway's OAuth."""
    root = request.scope.get("root_path", "").rstrip("/")
    return get_swagger_ui_html(
        openapi_url=f"{root}/openapi.json", title="gridgate API",
        swagger_js_url=f"{root}{ASSET_PATH}swagger-ui-bundle.js",
        swagger_css_url=f"{root}{ASSET_PATH}swagger-ui.css",
        swagger_favicon_url=f"{root}{ASSET_PATH}favicon-32x32.png",
        oauth2_redirect_url=f"{root}{OAUTH2_REDIRECT}",
        swagger_ui_parameters={"persistAuthorization": True})


@router.get(OAUTH2_REDIRECT, include_in_schema=False)
def oauth2_redirect() -> HTMLResponse:
    """Where Swagger UI's OAuth dialog lands (a self-contained page)."""
    return get_swagger_ui_oauth2_redirect_html()


@router.get(ASSET_PATH + "{name}", include_in_schema=False)
def asset(name: str) -> Response:
    """One Swagger UI file, from the installed package (cached by browsers for a day)."""
    if name not in ASSETS:
        raise NotFound(f"No documentation asset named {name!r}.")
    return Response(_asset(name), media_type=ASSETS[name],
                    headers={"Cache-Control": "public, max-age=86400",
                             "X-Content-Type-Options": "nosniff"})


@router.get(PREFIX + "{name}", response_class=PlainTextResponse,
            responses={200: {"content": {"text/plain": {}}}})
def problem_type(name: str) -> PlainTextResponse:
    """What a problem `type` (`/problems/NAME`) means, for a person who follows the URI."""
    known = BY_NAME.get(name)
    if known is None:
        raise NotFound(f"No problem type named {name!r}; the types are: "
                       f"{', '.join(sorted(BY_NAME))}.")
    return PlainTextResponse(f"{known.uri}: {known.status} {HTTPStatus(known.status).phrase}."
                             f"\n{known.meaning}\n")
