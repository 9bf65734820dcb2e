"""Health, metrics and schemas: the endpoints that need no job."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from sqlalchemy import text

from gateway import __version__
from gateway.api.deps import RuntimeDep
from gateway.api.schemas import Health
from gateway.domain.jobspec import JobSpec

router = APIRouter(tags=["system"])


@router.get("/api/v1/health", response_model=Health)
@router.get("/health", response_model=Health, include_in_schema=False)
def health(runtime: RuntimeDep, response: Response) -> Health:
    """Up, and able to reach its database."""
    try:
        with runtime.reading() as conn:
            conn.execute(text("SELECT 1"))
        database = "ok"
    except Exception as exc:  # any database failure means "degraded", never a 500
        database = f"error: {type(exc).__name__}"
        response.status_code = 503
    return Health(status="ok" if database == "ok" else "degraded", database=database,
                  version=__version__)


@router.get("/metrics", include_in_schema=False)
def metrics(runtime: RuntimeDep) -> Response:
    """Prometheus exposition of this process's metrics."""
    return Response(generate_latest(runtime.metrics.registry), media_type=CONTENT_TYPE_LATEST)


@router.get("/api/v1/schemas/job-spec")
def job_spec_schema() -> dict[str, Any]:
    """JSON Schema of the job request accepted by POST /api/v1/jobs."""
    return JobSpec.model_json_schema()
