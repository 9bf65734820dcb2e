"""The projects and allocations API's responses built from the services' views; the
documents are `gateway.schemas.projects`."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from gateway.accounting.units import MILLI
from gateway.schemas.projects import (
    AllocationList,
    AllocationOut,
    BalanceOut,
    MemberOut,
    ProjectList,
    ProjectOut,
    ProjectSummaryOut,
    TransferOut,
)
from gateway.services.money.balances import AllocationView, available_now
from gateway.services.projects import Member, ProjectDetail, ProjectSummary

__all__ = ["AllocationList", "AllocationOut", "BalanceOut", "MemberOut", "ProjectList",
           "ProjectOut", "TransferOut", "allocation_out", "balance_out", "member_out",
           "project_out", "summary_out"]


def su_decimal(amount_milli: int) -> Decimal:
    """milli-SU as SU with exactly three decimals (sent as the string "12.345")."""
    return (Decimal(amount_milli) / MILLI).quantize(Decimal("0.001"))


def allocation_out(view: AllocationView) -> AllocationOut:
    a = view.allocation
    # Transfers move only `available`: what the running sums do not explain is them.
    transferred = a.available_milli + a.held_milli + a.used_milli - a.awarded_milli
    return AllocationOut(
        id=a.id, project=view.project, pool=a.pool, starts_at=a.starts_at,
        ends_at=a.ends_at, status=view.status, awarded=su_decimal(a.awarded_milli),
        transferred=su_decimal(transferred), used=su_decimal(a.used_milli),
        held=su_decimal(a.held_milli), available=su_decimal(a.available_milli),
        credit_limit=su_decimal(a.credit_limit_milli), created_at=a.created_at,
        created_by=a.created_by)


def balance_out(project: str, views: list[AllocationView], as_of: datetime) -> BalanceOut:
    return BalanceOut(project=project, as_of=as_of, available=su_decimal(available_now(views)),
                      allocations=[allocation_out(v) for v in views])


def member_out(member: Member) -> MemberOut:
    return MemberOut(user=member.user, role=member.role)


def summary_out(summary: ProjectSummary) -> ProjectSummaryOut:
    project = summary.seen.project
    return ProjectSummaryOut(
        name=project.name, description=project.description,
        personal=project.personal_owner_id is not None,
        standing=summary.seen.standing.value, members=summary.members,
        available=su_decimal(summary.available_milli))


def project_out(found: ProjectDetail) -> ProjectOut:
    project = found.seen.project
    return ProjectOut(
        name=project.name, description=project.description,
        personal=project.personal_owner_id is not None, standing=found.seen.standing.value,
        created_at=project.created_at, members=[member_out(m) for m in found.members],
        allocations=[allocation_out(v) for v in found.allocations])
