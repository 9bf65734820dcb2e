"""FastAPI dependencies, as `Annotated` aliases the routes use directly."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from gateway.auth.principal import Principal
from gateway.domain.errors import Forbidden, Unauthenticated
from gateway.runtime import Runtime

# Dependencies that do no I/O are `async def`: FastAPI runs sync ones on the thread
# pool, and each hop there costs more than the work itself.


async def get_runtime(request: Request) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


async def get_session(runtime: RuntimeDep) -> AsyncIterator[Session]:
    """One session per request; the route commits, anything else rolls back. Creating
    and closing a committed session does no I/O, so this runs on the event loop."""
    with runtime.sessions() as session:
        yield session


async def get_reader(runtime: RuntimeDep) -> AsyncIterator[Session]:
    """A session for a request that only reads."""
    with runtime.readers() as session:
        yield session


SessionDep = Annotated[Session, Depends(get_session)]
ReaderDep = Annotated[Session, Depends(get_reader)]


async def bearer_token(request: Request) -> str:
    header = request.headers.get("authorization", "")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthenticated(
            "Send an access token as 'Authorization: Bearer <token>' "
            "(run 'gridgate login' to get one)."
        )
    return token.strip()


async def get_principal(
    runtime: RuntimeDep, token: Annotated[str, Depends(bearer_token)]
) -> Principal:
    """The caller; a cache hit costs no I/O, a miss verifies on the thread pool."""
    principal = runtime.authenticator.cached(token)
    if principal is None:
        principal = await run_in_threadpool(runtime.authenticator.authenticate, token)
    return principal


CurrentPrincipal = Annotated[Principal, Depends(get_principal)]


def require_scope(scope: str) -> Callable[[Principal], Awaitable[Principal]]:
    """A dependency that admits only tokens carrying `scope`."""

    async def check(principal: CurrentPrincipal) -> Principal:
        if scope not in principal.scopes:
            raise Forbidden(f"This needs the '{scope}' scope; the token has: "
                            f"{' '.join(sorted(principal.scopes)) or 'none'}.")
        return principal

    return check


JobsReader = Annotated[Principal, Depends(require_scope("jobs:read"))]
JobsWriter = Annotated[Principal, Depends(require_scope("jobs:write"))]
SitesReader = Annotated[Principal, Depends(require_scope("sites:read"))]
