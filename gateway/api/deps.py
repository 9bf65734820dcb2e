"""FastAPI dependencies, as `Annotated` aliases the routes use directly.

Dependencies that do no I/O are `async def` and take the bare `Request`: FastAPI runs
sync ones on the thread pool, and every hop there, like every extra node in the
dependency graph, costs more than the work itself on the hottest routes.

There is no session dependency: a route that writes opens `runtime.unit_of_work()`
itself, so the commit happens inside the route, before the response exists. The exit
code of a `yield` dependency runs after the response is sent (FastAPI's default
"request" scope), where a failed commit could no longer turn a 2xx into an error.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from starlette.concurrency import run_in_threadpool

from gateway.api.portal import session as portal_session
from gateway.domain.errors import Forbidden, Unauthenticated
from gateway.domain.principal import Principal
from gateway.runtime import Runtime


def runtime_of(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


async def get_runtime(request: Request) -> Runtime:
    return runtime_of(request)


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def bearer_token(request: Request) -> str:
    """The caller's access token: `Authorization: Bearer`, or else the portal's session
    cookie (with its CSRF rule, gateway.api.portal.session)."""
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    if not header and (session := portal_session.token_of(request)) is not None:
        return session
    raise Unauthenticated(
        "Send an access token as 'Authorization: Bearer <token>' "
        "(run 'gridgate login' to get one)."
    )


async def authenticate(request: Request) -> Principal:
    """The caller; a cache hit costs no I/O, a miss verifies on the thread pool."""
    authenticator = runtime_of(request).authenticator
    token = bearer_token(request)
    principal = authenticator.cached(token)
    if principal is None:
        principal = await run_in_threadpool(authenticator.authenticate, token)
    return principal


CurrentPrincipal = Annotated[Principal, Depends(authenticate)]


class ScopeCheck:
    """A dependency that admits only tokens carrying `scope` (the OpenAPI document reads
    `scope` to name each operation's security requirement)."""

    def __init__(self, scope: str) -> None:
        self.scope = scope

    async def __call__(self, request: Request) -> Principal:
        principal = await authenticate(request)
        if self.scope not in principal.scopes:
            raise Forbidden(f"This needs the '{self.scope}' scope; the token has: "
                            f"{' '.join(sorted(principal.scopes)) or 'none'}.")
        return principal


def require_scope(scope: str) -> ScopeCheck:
    """A dependency that admits only tokens carrying `scope`."""
    return ScopeCheck(scope)


JobsReader = Annotated[Principal, Depends(require_scope("jobs:read"))]
JobsWriter = Annotated[Principal, Depends(require_scope("jobs:write"))]
SitesReader = Annotated[Principal, Depends(require_scope("sites:read"))]
