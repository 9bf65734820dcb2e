"""Health, metrics and schemas: the endpoints that need no job."""

from __future__ import annotations

import secrets
from typing import Any

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import SecretStr

from gateway import __version__
from gateway.api.deps import CurrentPrincipal, RuntimeDep
from gateway.api.http.client_address import is_loopback
from gateway.api.schemas import Health, json_response
from gateway.domain.errors import Forbidden, Unauthenticated
from gateway.domain.jobspec import JobSpec
from gateway.repositories.database import ping
from gateway.schemas.identity import MeOut

router = APIRouter(tags=["system"])


@router.get("/api/v1/health", response_model=Health,
            responses={503: {"model": Health, "description": "Up, but the database is not"}})
@router.get("/health", response_model=Health, include_in_schema=False)
def health(runtime: RuntimeDep, response: Response) -> Health:
    """Up, and able to reach its database."""
    try:
        with runtime.reading() as conn:
            ping(conn)
        database = "ok"
    except Exception as exc:  # any database failure means "degraded", never a 500
        database = f"error: {type(exc).__name__}"
        response.status_code = 503
    return Health(status="ok" if database == "ok" else "degraded", database=database,
                  version=__version__)


def _check_scraper(request: Request, token: SecretStr | None) -> None:
    """Metrics tell who runs what, where: a token when one is set, else loopback only."""
    if token is None:
        if not is_loopback(request):
            raise Forbidden("/metrics answers clients on this host only; set "
                            "GRIDGATE_METRICS_TOKEN to scrape it from elsewhere with a "
                            "bearer token.")
        return
    scheme, _, sent = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not secrets.compare_digest(
            sent.strip().encode(), token.get_secret_value().encode()):
        raise Unauthenticated("/metrics needs 'Authorization: Bearer <GRIDGATE_METRICS_TOKEN>'.")


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request, runtime: RuntimeDep) -> Response:
    """Prometheus exposition of this process's metrics."""
    _check_scraper(request, runtime.settings.metrics_token)
    return Response(generate_latest(runtime.metrics.registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/api/v1/me", response_model=MeOut)
def me(principal: CurrentPrincipal) -> Response:
    """Who you are: your account, its issuer and subject, your token's scopes and your
    roles (any valid token; `gridgate whoami`)."""
    document = MeOut(user=principal.display, issuer=principal.issuer,
                     subject=principal.subject, scopes=sorted(principal.scopes),
                     roles=sorted(principal.roles))
    return json_response(MeOut, document)


@router.get("/api/v1/schemas/job-spec")
def job_spec_schema() -> dict[str, Any]:
    """JSON Schema of the job request accepted by POST /api/v1/jobs."""
    return JobSpec.model_json_schema()
