"""The FastAPI application factory. Nothing connects before the app starts."""

from __future__ import annotations

import gc
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import anyio.to_thread
from fastapi import FastAPI

from gateway import __version__
from gateway.api import api_document, problems
from gateway.api.http.middleware import BodyLimit, RequestMetrics
from gateway.api.http.nul_guard import RejectNul
from gateway.api.portal import pages as portal_pages
from gateway.api.routes import dashboard as dashboard_page
from gateway.api.routes import (
    docs_page,
    events,
    job_arrays,
    job_logs,
    job_outputs,
    jobs,
    oauth,
    sites,
    system,
    uploads,
    webhooks,
    workflows,
)
from gateway.api.routes import reports as report_routes
from gateway.api.routes.allocations import router as allocations_router
from gateway.api.routes.audit import router as audit_router
from gateway.api.routes.projects import router as projects_router
from gateway.api.tes import routes as tes_routes
from gateway.runtime import Runtime, build_runtime
from gateway.settings import Settings

Background = Callable[[Runtime, threading.Event], None]
# Every router the app serves, in the order they are matched.
ROUTERS = (jobs.router, job_arrays.router, workflows.router, job_logs.router, events.router,
           job_outputs.router, uploads.router, sites.router, system.router, oauth.router,
           projects_router, allocations_router, report_routes.router, dashboard_page.router,
           audit_router, webhooks.router, docs_page.router, tes_routes.router,
           portal_pages.router)
# Pages for a browser, not API operations: left out of the OpenAPI document.
_PAGES = (dashboard_page.router, portal_pages.router)


def create_app(settings: Settings | None = None, runtime: Runtime | None = None, *,
               background: Background | None = None) -> FastAPI:
    """The gateway app. Given a runtime it uses it (tests); else builds one from settings.
    `background` runs in a thread of this process while the app serves, until the event is
    set (gateway.serving passes the worker: the API does not import it)."""
    settings = settings or (runtime.settings if runtime else Settings())
    runtime = runtime or build_runtime(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        # Sync routes run on this pool. Few threads beat many: past a handful they only
        # fight over the GIL, and the queueing moves into latency tails.
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.api_threads
        # Everything built so far lives as long as the process: keep it out of the
        # collector's full passes, which otherwise show up as latency spikes.
        gc.collect()
        gc.freeze()
        # A request allocates thousands of short-lived objects; collecting the young
        # generation every 700 allocations costs more than it frees.
        gc.set_threshold(50_000, 20, 20)
        stop = threading.Event()
        thread = None
        if background is not None:
            thread = threading.Thread(target=background, args=(runtime, stop),
                                      name="gridgate-worker", daemon=True)
            thread.start()
        try:
            yield
        finally:
            stop.set()
            if thread is not None:
                thread.join(timeout=30)

    app = FastAPI(
        title="gridgate",
        version=__version__,
        description="Federated HPC job gateway. Errors are RFC 9457 problem details.",
        lifespan=lifespan,
        # A redirect to the slash-less path would build its Location from the request's
        # Host header (an open redirect for a forged Host): unknown paths are 404.
        redirect_slashes=False,
        generate_unique_id_function=api_document.operation_id,
        # /docs is served from local assets (routes/docs_page.py); ReDoc needs a CDN.
        docs_url=None, redoc_url=None, swagger_ui_oauth2_redirect_url=None,
    )
    app.state.runtime = runtime
    routes = [route for router in ROUTERS for route in router.routes]
    problems.install(app, routes)
    for router in ROUTERS:
        app.include_router(router, include_in_schema=router not in _PAGES)
    api_document.install(app, ROUTERS,
                         {("UploadCreate", "size"): settings.upload_max_bytes})
    app.add_middleware(RejectNul, routes=routes,
                       stream_body=uploads.is_chunk_put)
    app.add_middleware(RequestMetrics, metrics=runtime.metrics)
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes, exempt=uploads.is_chunk_put)
    return app
