"""The statements behind committee reports: every figure is a GROUP BY in the database
(never rows loaded into Python), each as of a time T (ledger rows with `at <= T`, usage
records with `received_at <= T`, attempts started by T)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    and_,
    case,
    cast,
    false,
    func,
    literal,
    or_,
    select,
    true,
)
from sqlalchemy.orm import Session

from gateway.accounting.report_math import SIZE_BUCKETS
from gateway.db.bank_models import Allocation, LedgerEntry, Lien, RateCard, UsageRow
from gateway.db.models import Job, Project, User

GROUPINGS = ("site", "user", "project", "size")


@dataclass(frozen=True)
class Scope:
    """Whose money a report may show: every project (`everything`), whole projects (by
    id), and projects where only the caller's own (`user_id`) usage is theirs to read."""

    everything: bool = False
    whole: Sequence[int] = ()
    own: Sequence[int] = ()
    user_id: str | None = None
    # Narrow to one project (already checked against the above).
    project_id: int | None = None
    # Only the caller's own jobs, in any project (a user's `gridgate usage`).
    owner_only: bool = False

    def projects(self) -> ColumnElement[bool]:
        """The allocations' and adjustments' projects (members read balances too)."""
        if self.project_id is not None:
            return Project.id == self.project_id
        if self.everything:
            return true()
        ids = [*self.whole, *self.own]
        return Project.id.in_(ids) if ids else false()

    def jobs(self) -> ColumnElement[bool]:
        """The jobs whose usage the caller may read."""
        mine = Job.owner_id == self.user_id
        if self.owner_only:
            return and_(mine, Job.project_id == self.project_id) if self.project_id else mine
        clauses: list[ColumnElement[bool]] = []
        if self.everything:
            clauses.append(true())
        if self.whole:
            clauses.append(Job.project_id.in_(list(self.whole)))
        if self.own and self.user_id is not None:
            clauses.append(and_(Job.project_id.in_(list(self.own)), mine))
        allowed = or_(*clauses) if clauses else false()
        if self.project_id is not None:
            return and_(Job.project_id == self.project_id, allowed)
        return allowed

    @property
    def unrestricted(self) -> bool:
        """Every job of every project: no join to the jobs needed."""
        return self.everything and self.project_id is None and not self.owner_only


@dataclass(frozen=True)
class Window:
    """What a usage or wait report covers: runs ending in [since, until) as of `as_of`."""

    as_of: datetime
    since: datetime | None = None
    until: datetime | None = None
    states: Sequence[str] = field(default_factory=tuple)


def seconds_between(session: Session, later: Any, earlier: Any) -> ColumnElement[Any]:
    """`later - earlier` in seconds, in the database's own date arithmetic."""
    if session.get_bind().dialect.name == "postgresql":
        return func.extract("epoch", later - earlier)
    return (func.julianday(later) - func.julianday(earlier)) * 86400.0


def _leg(account: str, *extra: ColumnElement[bool]) -> ColumnElement[int]:
    condition = and_(LedgerEntry.account == account, *extra)
    return func.coalesce(func.sum(case((condition, LedgerEntry.amount_milli), else_=0)), 0)


@dataclass(frozen=True)
class AllocationSums:
    """One allocation and its ledger accounts' sums as of T."""

    id: int
    project: str
    pool: str
    starts_at: datetime
    ends_at: datetime
    status: str
    credit_limit_milli: int
    awarded_milli: int
    available_milli: int
    held_milli: int
    used_milli: int
    used_in_window_milli: int


def _sums(*where: ColumnElement[bool]) -> Any:
    """Each allocation's accounts summed over the ledger rows matching `where`."""
    return (select(LedgerEntry.allocation_id.label("allocation_id"),
                   _leg("funding").label("funding"), _leg("available").label("available"),
                   _leg("held").label("held"), _leg("used").label("used"))
            .where(*where).group_by(LedgerEntry.allocation_id).subquery())


def allocation_sums(session: Session, scope: Scope, as_of: datetime, window_start: datetime,
                    now: datetime) -> list[AllocationSums]:
    """Each allocation created by `as_of`, with its accounts as of `as_of` and its usage
    (net of refunds) in (`window_start`, `as_of`].

    Held is what the liens open at `as_of` held (liens are reservations outside the
    ledger); available is the ledger's available (with older liens' held legs) less that.
    When `as_of` is nearer the start than `now`, the ledger rows at or before it are
    summed; otherwise each allocation's running sums (written in the same transaction as
    every ledger row, and checked against the ledger by the audit) less the rows after it:
    the same figures from fewer rows. Either way one statement, so one snapshot."""
    first = session.scalar(select(func.min(Allocation.created_at))
                           .join(Project, Project.id == Allocation.project_id)
                           .where(scope.projects()))
    if first is None:
        return []
    recent_side = as_of - first > now - as_of
    sums = _sums(LedgerEntry.at > as_of) if recent_side else _sums(LedgerEntry.at <= as_of)
    window = (select(LedgerEntry.allocation_id.label("allocation_id"),
                     func.sum(LedgerEntry.amount_milli).label("recent"))
              .where(LedgerEntry.at > window_start, LedgerEntry.at <= as_of,
                     LedgerEntry.account == "used")
              .group_by(LedgerEntry.allocation_id).subquery())
    held = (select(Lien.allocation_id.label("allocation_id"),
                   func.sum(Lien.amount_milli).label("held"))
            .where(Lien.created_at <= as_of,
                   or_(Lien.closed_at.is_(None), Lien.closed_at > as_of))
            .group_by(Lien.allocation_id).subquery())
    query = (select(Allocation, Project.name, sums.c.funding, sums.c.available,
                    sums.c.held, sums.c.used, window.c.recent, held.c.held.label("open"))
             .join(Project, Project.id == Allocation.project_id)
             .outerjoin(sums, sums.c.allocation_id == Allocation.id)
             .outerjoin(window, window.c.allocation_id == Allocation.id)
             .outerjoin(held, held.c.allocation_id == Allocation.id)
             .where(scope.projects(), Allocation.created_at <= as_of)
             .order_by(Project.name, Allocation.ends_at, Allocation.id))
    found = []
    for row in session.execute(query):
        a: Allocation = row[0]
        funding, unspent, used = (int(v or 0) for v in (
            row.funding, (row.available or 0) + (row.held or 0), row.used))
        if recent_side:  # the running sums (every row) less the rows after as_of
            funding = -a.awarded_milli - funding
            unspent = a.available_milli + a.held_milli - unspent
            used = a.used_milli - used
        open_liens = int(row.open or 0)
        found.append(AllocationSums(
            a.id, row.name, a.pool, a.starts_at, a.ends_at, a.status, a.credit_limit_milli,
            -funding, unspent - open_liens, open_liens, used, int(row.recent or 0)))
    return found


@dataclass(frozen=True)
class UsageGroup:
    """Usage of one group: runs, jobs, core-seconds and charges (net of refunds)."""

    key: str
    runs: int
    jobs: int
    core_seconds: int
    charged_milli: int
    refunded_milli: int


def _size_case() -> ColumnElement[str]:
    whens = [(and_(UsageRow.cores >= low, UsageRow.cores <= high) if high is not None
              else UsageRow.cores >= low, literal(label)) for label, low, high in SIZE_BUCKETS]
    return case(*whens, else_=literal("0"))


def _usage_filters(window: Window) -> list[ColumnElement[bool]]:
    # A run belongs to the period its site says it ended in (received time if it never
    # started); as of T, only records the gateway had received by T count.
    filters: list[ColumnElement[bool]] = [UsageRow.received_at <= window.as_of]
    ended = func.coalesce(UsageRow.ended_at, UsageRow.received_at)
    if window.since is not None:
        filters.append(ended >= window.since)
    if window.until is not None:
        filters.append(ended < window.until)
    return filters


def usage_by(session: Session, scope: Scope, window: Window, by: str) -> list[UsageGroup]:
    """Usage records grouped by site, user, project or job size (cores bucket)."""
    if by not in GROUPINGS:
        raise ValueError(f"unknown grouping {by!r}")
    key: Any = {
        "site": UsageRow.site_name,
        "user": func.coalesce(User.username, User.subject),
        "project": Project.name,
        "size": _size_case(),
    }[by]
    query: Select[Any] = select(
        key.label("key"), func.count().label("runs"),
        # A job's first run (run 0) at the site: a requeued job's later runs are not jobs.
        func.coalesce(func.sum(case((UsageRow.run == 0, 1), else_=0)), 0).label("jobs"),
        func.coalesce(func.sum(UsageRow.cores * UsageRow.elapsed), 0).label("cs"),
        func.coalesce(func.sum(UsageRow.charged_milli), 0).label("charged"),
        func.coalesce(func.sum(UsageRow.refunded_milli), 0).label("refunded"),
    ).where(*_usage_filters(window))
    # The plain site report of an administrator needs no join: one pass over the records.
    if not (scope.unrestricted and by in ("site", "size")):
        query = query.join(Job, Job.id == UsageRow.job_id).where(scope.jobs())
    if by == "user":
        query = query.join(User, User.id == Job.owner_id)
    elif by == "project":
        query = query.join(Project, Project.id == Job.project_id)
    query = query.group_by(key).order_by(key)
    return [UsageGroup(str(r.key), int(r.runs), int(r.jobs), int(r.cs), int(r.charged),
                       int(r.refunded)) for r in session.execute(query)]


@dataclass(frozen=True)
class RateBasis:
    """A site's rate card in force at T: the exchange rate of its core-hours into SU."""

    site: str
    version: int
    core_hour_milli: int


def rate_basis(session: Session, as_of: datetime) -> dict[str, RateBasis]:
    """Each site's newest rate card created by `as_of`."""
    newest = (select(RateCard.site_name, func.max(RateCard.version).label("version"))
              .where(RateCard.created_at <= as_of).group_by(RateCard.site_name).subquery())
    query = select(RateCard).join(newest, and_(RateCard.site_name == newest.c.site_name,
                                                RateCard.version == newest.c.version))
    return {c.site_name: RateBasis(c.site_name, c.version, c.core_hour_milli)
            for c in session.scalars(query)}


@dataclass(frozen=True)
class Adjustment:
    """One refund or adjustment: the amount into the allocation's available funds."""

    at: datetime
    kind: str
    allocation_id: int
    project: str
    amount_milli: int
    reason: str | None
    actor: str
    job_id: str | None


def adjustments(session: Session, scope: Scope, window: Window) -> list[Adjustment]:
    """Refunds (of jobs the caller may read) and adjustments (of projects they may read),
    by time; each transaction once (its `available` leg)."""
    refund_ok = (true() if scope.unrestricted
                 else LedgerEntry.job_id.in_(select(Job.id).where(scope.jobs())))
    query = (select(LedgerEntry, Project.name)
             .join(Allocation, Allocation.id == LedgerEntry.allocation_id)
             .join(Project, Project.id == Allocation.project_id)
             .where(LedgerEntry.account == "available", LedgerEntry.at <= window.as_of,
                    scope.projects(),
                    or_(LedgerEntry.kind == "adjustment",
                        and_(LedgerEntry.kind == "refund", refund_ok)))
             .order_by(LedgerEntry.at, LedgerEntry.id))
    if window.since is not None:
        query = query.where(LedgerEntry.at >= window.since)
    if window.until is not None:
        query = query.where(LedgerEntry.at < window.until)
    return [Adjustment(e.at, e.kind, e.allocation_id, name, e.amount_milli, e.reason, e.actor,
                       e.job_id) for e, name in session.execute(query)]


@dataclass(frozen=True)
class JobUsage:
    """One job as `sacct` would show it: its runs' elapsed time, cores and charge (from
    its usage records: `runs` of them), and what the gateway saw of it without one."""

    id: str
    name: str
    project: str
    owner: str
    site: str | None
    state: str
    created_at: datetime
    runs: int
    elapsed: int
    cores: int
    charged_milli: int
    refunded_milli: int
    array_job_id: str | None
    array_index: int | None
    started_at: datetime | None
    ended_at: datetime | None
    resources: dict[str, Any]  # the spec's resources, as stored


def job_usage(session: Session, scope: Scope, window: Window, limit: int) -> list[JobUsage]:
    """The jobs in scope created in [since, until), newest first, with their usage."""
    per_job = (select(UsageRow.job_id.label("job_id"), func.count().label("runs"),
                      func.sum(UsageRow.elapsed).label("elapsed"),
                      func.max(UsageRow.cores).label("cores"),
                      func.coalesce(func.sum(UsageRow.charged_milli), 0).label("charged"),
                      func.sum(UsageRow.refunded_milli).label("refunded"))
               .where(UsageRow.received_at <= window.as_of)
               .group_by(UsageRow.job_id).subquery())
    query = (select(Job.id, Job.name, Project.name.label("project"),
                    func.coalesce(User.username, User.subject).label("owner"),
                    Job.site_name, Job.state, Job.created_at, Job.array_job_id,
                    Job.array_index, Job.started_at, Job.ended_at, Job.spec, per_job)
             .join(Project, Project.id == Job.project_id)
             .join(User, User.id == Job.owner_id)
             .outerjoin(per_job, per_job.c.job_id == Job.id)
             .where(scope.jobs(), Job.created_at <= window.as_of)
             # An array's tasks share their creation time: by index within it, as sacct.
             .order_by(Job.created_at.desc(), Job.array_job_id, Job.array_index, Job.id)
             .limit(limit))
    if window.since is not None:
        query = query.where(Job.created_at >= window.since)
    if window.until is not None:
        query = query.where(Job.created_at < window.until)
    if window.states:
        query = query.where(Job.state.in_(list(window.states)))
    return [JobUsage(r.id, r.name, r.project, r.owner, r.site_name, r.state, r.created_at,
                     int(r.runs or 0), int(r.elapsed or 0), int(r.cores or 0),
                     int(r.charged or 0), int(r.refunded or 0), r.array_job_id,
                     r.array_index, r.started_at, r.ended_at,
                     dict((r.spec or {}).get("resources") or {}))
            for r in session.execute(query)]


def available_by_day(session: Session, scope: Scope, as_of: datetime
                     ) -> list[tuple[int, int, int]]:
    """(allocation id, day since its start, change of its available funds that day) for
    the ledger rows at or before `as_of`: the points of a burn-down chart."""
    days = seconds_between(session, LedgerEntry.at, Allocation.starts_at) / 86400.0
    # Whole days, rounded down (PostgreSQL's cast rounds; SQLite's truncates, the same
    # for the non-negative days of an allocation's life).
    if session.get_bind().dialect.name == "postgresql":
        days = func.floor(days)
    day = cast(days, Integer)
    query = (select(LedgerEntry.allocation_id, day.label("day"),
                    func.sum(LedgerEntry.amount_milli).label("delta"))
             .join(Allocation, Allocation.id == LedgerEntry.allocation_id)
             .join(Project, Project.id == Allocation.project_id)
             .where(LedgerEntry.account == "available", LedgerEntry.at <= as_of,
                    scope.projects())
             .group_by(LedgerEntry.allocation_id, day)
             .order_by(LedgerEntry.allocation_id, day))
    return [(int(r.allocation_id), int(r.day), int(r.delta)) for r in session.execute(query)]
