"""/api/v1/allocations: what projects were granted, and the committee's actions on it.

    GET  /allocations?project=P          allocations you may read (of P, or of all yours)
    POST /allocations                    grant {project, pool, amount, starts_at?, ends_at,
                                         credit_limit?, reason}
    POST /allocations/{id}:adjust        {amount (negative takes back), reason}
    POST /allocations:transfer           {source, target, amount, reason}
    POST /allocations/{id}:suspend       {reason}   no new jobs may draw on it
    POST /allocations/{id}:resume        {reason}

Amounts are SU, as a decimal string ("1250.5") or a number, at most three decimals.
Every action but the reads is an administrator's; the ledger records who and why.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Annotated, cast

from fastapi import APIRouter, Query, Response
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field
from pydantic.config import JsonDict
from sqlalchemy.orm import Session

from gateway.accounting.units import milli
from gateway.api.deps import JobsReader, JobsWriter, RuntimeDep
from gateway.api.params.paging import DEFAULT_LIMIT, Cursor, Limit
from gateway.api.project_schemas import (
    AllocationList,
    AllocationOut,
    TransferOut,
    allocation_out,
)
from gateway.api.schemas import json_response
from gateway.db.bank_models import Allocation
from gateway.runtime import Runtime
from gateway.services import cursors
from gateway.services.money import allocation_admin, balances
from gateway.services.money.allocations import Grant

router = APIRouter(prefix="/api/v1", tags=["allocations"])

# 15 digits before the point: far more SU than any machine delivers, and milli-SU of it
# still fit the ledger's 64-bit integers.
SU_TEXT = r"^[+-]?\d{1,15}(?:\.\d{0,3})?$"


def _su_text(schema: JsonDict) -> None:
    """The document's rule for SU given as text (a number is the other form)."""
    for form in cast(list[JsonDict], schema.get("anyOf", [])):
        if form.get("type") == "string":
            form["pattern"] = SU_TEXT
        if form.get("type") == "number":  # as max_digits and decimal_places allow
            form.update(exclusiveMaximum=1e15, exclusiveMinimum=-1e15, multipleOf=0.001)


SU = Annotated[Decimal, Field(max_digits=18, decimal_places=3, allow_inf_nan=False,
                              json_schema_extra=_su_text,
                              description="Service units, e.g. \"1250.5\" (3 decimals at most)")]
Reason = Annotated[str, Field(min_length=1, max_length=500,
                              description="Why, for the committee's record.")]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GrantIn(_Body):
    project: str = Field(min_length=1, max_length=64)
    pool: str = Field(min_length=1, max_length=64,
                      description="A site's name, or \"*\" for any site of the federation.")
    amount: SU
    starts_at: AwareDatetime | None = Field(default=None, description="Default: now.")
    ends_at: AwareDatetime
    credit_limit: SU = Field(default=Decimal(0),
                             description="How far below zero `available` may go.")
    reason: Reason


class AdjustIn(_Body):
    amount: SU = Field(description="SU to add; negative takes SU back.")
    reason: Reason


class TransferIn(_Body):
    source: int = Field(description="The allocation the SU come from.")
    target: int = Field(description="The allocation they go to.")
    amount: SU
    reason: Reason


class StatusIn(_Body):
    reason: Reason


def _out(session: Session, allocation: Allocation, now: datetime) -> AllocationOut:
    return allocation_out(balances.view(session, allocation, now))


@router.get("/allocations", response_model=AllocationList)
def list_allocations(principal: JobsReader, runtime: RuntimeDep,
                     project: Annotated[str | None, Query(max_length=64)] = None,
                     limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None) -> Response:
    """The allocations of `project`, or of every project you may read; follow
    `next_cursor` for the next page."""
    now = runtime.clock()
    with runtime.readers() as session:
        found = cursors.from_list(balances.list_allocations(session, principal, project, now),
                                  limit, cursor, lambda v: str(v.allocation.id))
        document = AllocationList(items=[allocation_out(v) for v in found.rows],
                                  next_cursor=found.next_cursor)
    return json_response(AllocationList, document)


@router.post("/allocations", status_code=201, response_model=AllocationOut)
def grant_allocation(body: GrantIn, principal: JobsWriter, runtime: RuntimeDep) -> Response:
    """Grant a project an allocation (administrators)."""
    now = runtime.clock()
    g = Grant(body.project, body.pool, milli(body.amount), body.starts_at or now, body.ends_at,
              milli(body.credit_limit))
    with runtime.unit_of_work() as session:
        allocation = allocation_admin.grant(session, principal, g, runtime.sites.names(),
                                            body.reason, now)
        document = _out(session, allocation, now)
    return json_response(AllocationOut, document, 201)


@router.post("/allocations/{allocation_id}:adjust", response_model=AllocationOut)
def adjust_allocation(allocation_id: int, body: AdjustIn, principal: JobsWriter,
                      runtime: RuntimeDep) -> Response:
    """Add SU to an allocation, or take SU back (never more than it has spendable)."""
    now = runtime.clock()
    with runtime.unit_of_work() as session:
        allocation = allocation_admin.adjust(session, principal, allocation_id,
                                             milli(body.amount), body.reason, now)
        document = _out(session, allocation, now)
    return json_response(AllocationOut, document)


@router.post("/allocations:transfer", response_model=TransferOut)
def transfer_allocation(body: TransferIn, principal: JobsWriter, runtime: RuntimeDep
                        ) -> Response:
    """Move SU from one allocation to another (of the same project or not)."""
    now = runtime.clock()
    with runtime.unit_of_work() as session:
        allocation_admin.transfer(session, principal, body.source, body.target,
                                  milli(body.amount), body.reason, now)
        document = TransferOut(
            source=allocation_out(balances.view_of(session, body.source, now)),
            target=allocation_out(balances.view_of(session, body.target, now)))
    return json_response(TransferOut, document)


def _status(allocation_id: int, status: str, body: StatusIn, principal: JobsWriter,
            runtime: Runtime) -> Response:
    now = runtime.clock()
    with runtime.unit_of_work() as session:
        allocation = allocation_admin.set_status(session, principal, allocation_id, status,
                                                 body.reason)
        document = _out(session, allocation, now)
    return json_response(AllocationOut, document)


@router.post("/allocations/{allocation_id}:suspend", response_model=AllocationOut)
def suspend_allocation(allocation_id: int, body: StatusIn, principal: JobsWriter,
                       runtime: RuntimeDep) -> Response:
    """No new job may draw on the allocation; jobs holding liens on it settle as usual."""
    return _status(allocation_id, "suspended", body, principal, runtime)


@router.post("/allocations/{allocation_id}:resume", response_model=AllocationOut)
def resume_allocation(allocation_id: int, body: StatusIn, principal: JobsWriter,
                      runtime: RuntimeDep) -> Response:
    """Make a suspended allocation active again."""
    return _status(allocation_id, "active", body, principal, runtime)
