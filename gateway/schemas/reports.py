"""Committee reports and a user's usage as the API sends them (GET /reports/..., GET
/usage). Amounts are SU (3 decimals: the ledger's milli-SU); durations are seconds.
Every report says the time it is "as of" and how its figures were computed (`basis`)."""

from __future__ import annotations

from datetime import datetime

from typing_extensions import TypedDict


class AllocationRow(TypedDict):
    """One allocation as of T: award, spending and the projection at its burn rate."""

    id: int
    project: str
    pool: str  # a site's name, or '*' for the whole federation
    starts_at: datetime
    ends_at: datetime
    status: str  # active, suspended, or expired (ended by T)
    awarded_su: float
    used_su: float
    held_su: float
    remaining_su: float
    credit_limit_su: float
    burn_su_per_day: float
    exhausts_at: datetime | None  # null: nothing used in the window (never, at this rate)
    exhausts_before_end: bool


class AllocationReport(TypedDict):
    as_of: datetime
    window_days: int
    basis: str
    allocations: list[AllocationRow]


class UsageRowOut(TypedDict):
    """Usage of one group (a site, user, project or job size)."""

    key: str
    runs: int
    jobs: int
    core_hours: float
    charged_su: float
    refunded_su: float
    net_su: float
    # The site's rate card in force at T (site grouping only): SU per core-hour.
    rate_card_version: int | None
    su_per_core_hour: float | None


class UsageReport(TypedDict):
    as_of: datetime
    by: str
    since: datetime | None
    until: datetime | None
    basis: str
    rows: list[UsageRowOut]
    total: UsageRowOut


class WaitRow(TypedDict):
    """Queue waits of the jobs that started at one site ('*': every site)."""

    site: str
    jobs: int
    wait_p50: float | None
    wait_p90: float | None
    wait_mean: float | None
    finished: int
    expansion_factor: float | None


class WaitReport(TypedDict):
    as_of: datetime
    since: datetime | None
    until: datetime | None
    basis: str
    rows: list[WaitRow]


class AdjustmentRow(TypedDict):
    """A refund or an adjustment: SU into (negative: out of) the allocation's funds."""

    at: datetime
    kind: str
    allocation_id: int
    project: str
    amount_su: float
    reason: str | None
    actor: str
    job_id: str | None


class AdjustmentReport(TypedDict):
    as_of: datetime
    since: datetime | None
    until: datetime | None
    basis: str
    rows: list[AdjustmentRow]


class JobUsageRow(TypedDict):
    """One job as sacct shows it: elapsed time and cores of its runs, and its charge.
    Without a usage record (`runs` 0: the job ran before allocations were enforced, or
    runs now), elapsed is from its start and end as the gateway saw them, and cores what
    it asked for; null where that is unknown, never a made-up 0."""

    job_id: str
    # A task of a job array: the array's id and the task's index (sacct's ID_INDEX).
    array_job_id: str | None
    array_index: int | None
    name: str
    project: str
    owner: str
    site: str | None
    state: str
    created_at: datetime
    runs: int
    elapsed: int | None
    cores: int | None
    charge_su: float


class JobUsageList(TypedDict):
    as_of: datetime
    jobs: list[JobUsageRow]
