"""Projects, their members, allocations and balances, as the API sends them.

Amounts are service units as decimal strings with three decimals ("1250.000"): exact (the
bank stores integer milli-SU) and readable by any JSON parser without float rounding.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from typing_extensions import TypedDict


class MemberOut(TypedDict):
    """A member of a project: `role` is "pi" (adds members, reads all usage) or "member"."""

    user: str  # the username, or the user id of a user without one
    role: str


class AllocationOut(TypedDict):
    """One allocation and where it stands. `status`: active, pending (not started yet),
    suspended (no new jobs may draw on it) or expired (its end has passed).
    available = awarded + transferred - used - held; it may go down to -credit_limit."""

    id: int
    project: str
    pool: str  # a site's name, or "*" for any site of the federation
    starts_at: datetime
    ends_at: datetime
    status: str
    awarded: Decimal
    transferred: Decimal  # net SU moved in (+) or out (-) by transfers
    used: Decimal  # charged, net of refunds
    held: Decimal  # liens of jobs waiting or running
    available: Decimal
    credit_limit: Decimal
    created_at: datetime
    created_by: str


class AllocationList(TypedDict):
    """A page of allocations; `next_cursor` asks for the next one."""

    items: list[AllocationOut]
    next_cursor: str | None


class TransferOut(TypedDict):
    """Both sides of a transfer, after it."""

    source: AllocationOut
    target: AllocationOut


class BalanceOut(TypedDict):
    """A project's balance: every allocation, and what it may spend now (the sum of
    `available` over its active allocations)."""

    project: str
    as_of: datetime
    available: Decimal
    allocations: list[AllocationOut]


class ProjectSummaryOut(TypedDict):
    """A project as listed: `standing` is how the caller stands towards it (admin,
    auditor, pi or member)."""

    name: str
    description: str | None
    personal: bool
    standing: str
    members: int
    available: Decimal  # summed over its active allocations


class ProjectList(TypedDict):
    """A page of projects you may read; `next_cursor` asks for the next one."""

    items: list[ProjectSummaryOut]
    next_cursor: str | None


class ProjectOut(TypedDict):
    """One project with its members and allocations."""

    name: str
    description: str | None
    personal: bool
    standing: str
    created_at: datetime
    members: list[MemberOut]
    allocations: list[AllocationOut]
