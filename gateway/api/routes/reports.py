"""/api/v1/reports/... (committee reports) and /api/v1/usage (a user's jobs, sacct-like).

Every report is "as of" a time (`as_of`, default now) and comes as JSON or, with
`Accept: text/csv` or `?format=csv`, as CSV (one row per line, a header first). Who may
read what is gateway.auth.project_access (404 for a project the caller has no part in).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request, Response

from gateway.api.csv_export import csv_response
from gateway.api.deps import JobsReader, RuntimeDep
from gateway.api.params.times import Time, as_utc
from gateway.api.schemas import json_response
from gateway.domain.states import JobState
from gateway.schemas.reports import (
    AdjustmentReport,
    AllocationReport,
    JobUsageList,
    UsageReport,
    WaitReport,
)
from gateway.services.money import reports
from gateway.services.money.reports import Period

router = APIRouter(prefix="/api/v1", tags=["reports"])

Project = Annotated[str | None, Query(max_length=64, description="A project's name.")]
AsOf = Annotated[Time, Query(description="Report as of this time (default now); "
                                         "a time without a zone is UTC.")]
Since = Annotated[Time, Query(description="From this time (inclusive).")]
Until = Annotated[Time, Query(description="Up to this time (exclusive).")]
Format = Annotated[Literal["json", "csv"] | None, Query(description="json (default) or csv; "
                                                                    "or send Accept: text/csv")]


def _period(as_of: datetime | None, since: datetime | None = None,
            until: datetime | None = None, states: Sequence[str] = ()) -> Period:
    return Period(as_utc(as_of), as_utc(since), as_utc(until), tuple(states))


def wants_csv(request: Request, fmt: str | None) -> bool:
    """CSV when asked by `?format=csv`, or by an Accept header naming text/csv first."""
    if fmt is not None:
        return fmt == "csv"
    accept = request.headers.get("accept", "")
    return accept.split(",")[0].split(";")[0].strip().lower() == "text/csv"


@router.get("/reports/allocations", response_model=AllocationReport)
def allocations_report(
    request: Request, principal: JobsReader, runtime: RuntimeDep, project: Project = None,
    as_of: AsOf = None, window_days: Annotated[int, Query(ge=1, le=3650)] = 30,
    format: Format = None,
) -> Response:
    """Per allocation: awarded, used, held, remaining, burn rate and projected exhaustion."""
    with runtime.readers() as session:
        report = reports.allocation_report(session, principal, project, _period(as_of),
                                           window_days, runtime.clock())
    if wants_csv(request, format):
        return csv_response(report["allocations"], "allocations")
    return json_response(AllocationReport, report)


@router.get("/reports/usage", response_model=UsageReport)
def usage_report(
    request: Request, principal: JobsReader, runtime: RuntimeDep,
    by: Literal["site", "user", "project", "size"] = "site", project: Project = None,
    since: Since = None, until: Until = None, as_of: AsOf = None,
    format: Format = None,
) -> Response:
    """Usage (runs, jobs, core-hours, SU) by site, user, project or job size."""
    with runtime.readers() as session:
        report = reports.usage_report(session, principal, by, project,
                                      _period(as_of, since, until), runtime.clock())
    if wants_csv(request, format):
        return csv_response([*report["rows"], report["total"]], f"usage-by-{by}")
    return json_response(UsageReport, report)


@router.get("/reports/waits", response_model=WaitReport)
def waits_report(
    request: Request, principal: JobsReader, runtime: RuntimeDep, project: Project = None,
    since: Since = None, until: Until = None, as_of: AsOf = None,
    format: Format = None,
) -> Response:
    """Queue wait p50/p90, mean and expansion factor per site and over all ('*')."""
    with runtime.readers() as session:
        report = reports.wait_report(session, principal, project,
                                     _period(as_of, since, until), runtime.clock())
    if wants_csv(request, format):
        return csv_response(report["rows"], "waits")
    return json_response(WaitReport, report)


@router.get("/reports/adjustments", response_model=AdjustmentReport)
def adjustments_report(
    request: Request, principal: JobsReader, runtime: RuntimeDep, project: Project = None,
    since: Since = None, until: Until = None, as_of: AsOf = None,
    format: Format = None,
) -> Response:
    """Refunds and adjustments with their reasons and approvers."""
    with runtime.readers() as session:
        report = reports.adjustment_report(session, principal, project,
                                           _period(as_of, since, until), runtime.clock())
    if wants_csv(request, format):
        return csv_response(report["rows"], "adjustments")
    return json_response(AdjustmentReport, report)


@router.get("/usage", response_model=JobUsageList)
def usage_by_job(
    request: Request, principal: JobsReader, runtime: RuntimeDep, project: Project = None,
    since: Since = None, until: Until = None,
    state: Annotated[list[str], Query(max_length=16, json_schema_extra={"items": {
        "type": "string", "enum": [s.value for s in JobState]}})] = [],  # noqa: B006
    limit: Annotated[int, Query(ge=1, le=reports.MAX_JOBS)] = 1000,
    format: Format = None,
) -> Response:
    """Your jobs (with `project`, a PI: the project's) created in [since, until), newest
    first: elapsed time, cores and charge of their runs."""
    with runtime.readers() as session:
        found = reports.job_usage(session, principal, project, _period(None, since, until,
                                                                       state),
                                  limit, runtime.clock())
    if wants_csv(request, format):
        return csv_response(found["jobs"], "usage")
    return json_response(JobUsageList, found)
