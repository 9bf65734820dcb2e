"""Reports for allocation committees and a user's own usage, each "as of" a time T: the
ledger is append-only, so a past balance is the sum of the rows at or before T.

Who sees what is gateway.auth.project_access: administrators and auditors every
project, a PI their whole project, a member the balances and their own usage only, anyone
else nothing (404). The sums are SQL aggregates (gateway.repositories.money.reports); the
arithmetic on them is gateway.accounting.report_math.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from gateway.accounting import report_math as rm
from gateway.accounting.requested import requested
from gateway.auth.project_access import (
    Standing,
    access,
    is_auditor,
    visible_projects,
)
from gateway.domain.errors import Invalid
from gateway.domain.jobspec import Resources
from gateway.domain.principal import Principal
from gateway.domain.states import JobState
from gateway.repositories.money import report_waits
from gateway.repositories.money import reports as repo
from gateway.repositories.money.reports import Scope, Window
from gateway.schemas.reports import (
    AdjustmentReport,
    AdjustmentRow,
    AllocationReport,
    AllocationRow,
    JobUsageList,
    JobUsageRow,
    UsageReport,
    UsageRowOut,
    WaitReport,
    WaitRow,
)

ALLOCATIONS_BASIS = (
    "From the ledger rows at or before as_of: awarded = deposits and adjustments, used = "
    "charges net of refunds, held = open liens, remaining = available (awarded plus "
    "transfers, minus used and held). Burn rate = used in the window / its days; "
    "exhaustion = as_of + remaining / burn rate.")
USAGE_BASIS = (
    "Usage records received by as_of, by the time the site says the run ended; jobs = "
    "first runs (a requeue is another run of the same job). SU are "
    "charged per run as core-hours x the site's SU per core-hour (its rate card, shown per "
    "site), so SU add up across sites; core-hours do not compare across sites.")
WAITS_BASIS = (
    "Jobs whose run (the attempt that started first) started by as_of. Wait = that "
    "attempt's start - the job's creation at the gateway (routing, staging in and the "
    "site's queue), both on the gateway's clock; p50/p90 by nearest rank. Expansion "
    "factor = (sum of waits + sum of runs) / sum of runs over the jobs finished by as_of.")
ADJUSTMENTS_BASIS = ("Ledger refunds and adjustments at or before as_of, with the reason "
                     "and approver recorded; amounts are into the allocation's funds.")
MAX_WINDOW_DAYS = 3650
QUANTILES = (0.5, 0.9)
MAX_JOBS = 10_000


@dataclass(frozen=True)
class Period:
    """The time a report reads: as of `as_of` (default now), runs in [since, until)."""

    as_of: datetime | None = None
    since: datetime | None = None
    until: datetime | None = None
    states: Sequence[str] = ()


def _window(period: Period, now: datetime) -> Window:
    as_of = period.as_of or now
    if as_of > now:
        raise Invalid("as_of is in the future: a report reads what has happened.",
                      field="as_of")
    if period.since and period.until and period.since >= period.until:
        raise Invalid("since must be before until.", field="since")
    known = {s.value for s in JobState}
    for state in period.states:
        if state not in known:
            raise Invalid(f"Unknown job state '{state}'; one of {', '.join(sorted(known))}.",
                          field="state")
    return Window(as_of, period.since, period.until, tuple(period.states))


def scope_for(session: Session, principal: Principal, project: str | None) -> Scope:
    """What the caller may read: of one project (NotFound if they have no standing
    there), or of every project they stand on."""
    if project is not None:
        acc = access(session, principal, project)
        if acc.standing is Standing.MEMBER:
            return Scope(own=(acc.project.id,), user_id=principal.user_id,
                         project_id=acc.project.id)
        return Scope(whole=(acc.project.id,), user_id=principal.user_id,
                     project_id=acc.project.id)
    if "admin" in principal.roles or is_auditor(principal):
        return Scope(everything=True, user_id=principal.user_id)
    visible = visible_projects(session, principal)
    return Scope(whole=tuple(a.project.id for a in visible if a.reads_everyones_usage),
                 own=tuple(a.project.id for a in visible if not a.reads_everyones_usage),
                 user_id=principal.user_id)


def _su(amount_milli: int) -> float:
    return amount_milli / 1000


def allocation_report(session: Session, principal: Principal, project: str | None,
                      period: Period, window_days: int, now: datetime) -> AllocationReport:
    """Per allocation: awarded, used, held, remaining, burn rate and exhaustion, as of T."""
    if not 1 <= window_days <= MAX_WINDOW_DAYS:
        raise Invalid(f"window_days is 1 to {MAX_WINDOW_DAYS}.", field="window_days")
    scope = scope_for(session, principal, project)
    as_of = _window(period, now).as_of
    window = timedelta(days=window_days)
    rows: list[AllocationRow] = []
    for a in repo.allocation_sums(session, scope, as_of, as_of - window, now):
        burn = rm.burn_per_day_milli(a.used_in_window_milli, window)
        ends = rm.exhaustion(a.available_milli, burn, as_of, a.ends_at)
        rows.append(AllocationRow(
            id=a.id, project=a.project, pool=a.pool, starts_at=a.starts_at,
            ends_at=a.ends_at, status="expired" if a.ends_at <= as_of else a.status,
            awarded_su=_su(a.awarded_milli), used_su=_su(a.used_milli),
            held_su=_su(a.held_milli), remaining_su=_su(a.available_milli),
            credit_limit_su=_su(a.credit_limit_milli), burn_su_per_day=_su(burn),
            exhausts_at=ends.at, exhausts_before_end=ends.before_end))
    return AllocationReport(as_of=as_of, window_days=window_days, basis=ALLOCATIONS_BASIS,
                            allocations=rows)


def _usage_out(key: str, runs: int, jobs: int, core_seconds: int, charged: int,
               refunded: int, basis: repo.RateBasis | None = None) -> UsageRowOut:
    return UsageRowOut(
        key=key, runs=runs, jobs=jobs, core_hours=rm.core_hours(core_seconds),
        charged_su=_su(charged), refunded_su=_su(refunded), net_su=_su(charged - refunded),
        rate_card_version=basis.version if basis else None,
        su_per_core_hour=_su(basis.core_hour_milli) if basis else None)


def usage_report(session: Session, principal: Principal, by: str, project: str | None,
                 period: Period, now: datetime) -> UsageReport:
    """Usage grouped by site, user, project or job size, with the cross-site total."""
    if by not in repo.GROUPINGS:
        raise Invalid(f"by is one of {', '.join(repo.GROUPINGS)}.", field="by")
    scope = scope_for(session, principal, project)
    window = _window(period, now)
    groups = repo.usage_by(session, scope, window, by)
    rates = repo.rate_basis(session, window.as_of) if by == "site" else {}
    rows = [_usage_out(g.key, g.runs, g.jobs, g.core_seconds, g.charged_milli,
                       g.refunded_milli, rates.get(g.key)) for g in groups]
    total = _usage_out("total", sum(g.runs for g in groups), sum(g.jobs for g in groups),
                       sum(g.core_seconds for g in groups),
                       sum(g.charged_milli for g in groups),
                       sum(g.refunded_milli for g in groups))
    return UsageReport(as_of=window.as_of, by=by, since=window.since, until=window.until,
                       basis=USAGE_BASIS, rows=rows, total=total)


def wait_report(session: Session, principal: Principal, project: str | None, period: Period,
                now: datetime) -> WaitReport:
    """Wait p50/p90, mean and expansion factor per site and over every site ('*')."""
    scope = scope_for(session, principal, project)
    window = _window(period, now)
    totals, values = report_waits.wait_figures(session, scope, window, QUANTILES)
    everyone = report_waits.WaitTotals(
        "*", sum(t.jobs for t in totals), sum(t.wait_seconds for t in totals),
        sum(t.finished for t in totals), sum(t.finished_wait_seconds for t in totals),
        sum(t.run_seconds for t in totals))

    def row(t: report_waits.WaitTotals) -> WaitRow:
        site = None if t.site == "*" else t.site
        at = {q: values.get((site, q)) for q in QUANTILES}
        return WaitRow(site=t.site, jobs=t.jobs, wait_p50=at.get(0.5),
                       wait_p90=at.get(0.9),
                       wait_mean=t.wait_seconds / t.jobs if t.jobs else None,
                       finished=t.finished,
                       expansion_factor=rm.expansion_factor(t.finished_wait_seconds,
                                                            t.run_seconds))

    return WaitReport(as_of=window.as_of, since=window.since, until=window.until,
                      basis=WAITS_BASIS, rows=[row(t) for t in [*totals, everyone]])


def adjustment_report(session: Session, principal: Principal, project: str | None,
                      period: Period, now: datetime) -> AdjustmentReport:
    """Refunds and adjustments with their reasons and approvers, oldest first."""
    scope = scope_for(session, principal, project)
    window = _window(period, now)
    rows = [AdjustmentRow(at=a.at, kind=a.kind, allocation_id=a.allocation_id,
                          project=a.project, amount_su=_su(a.amount_milli), reason=a.reason,
                          actor=a.actor, job_id=a.job_id)
            for a in repo.adjustments(session, scope, window)]
    return AdjustmentReport(as_of=window.as_of, since=window.since, until=window.until,
                            basis=ADJUSTMENTS_BASIS, rows=rows)


def job_usage(session: Session, principal: Principal, project: str | None, period: Period,
              limit: int, now: datetime) -> JobUsageList:
    """The caller's jobs (a PI's `project`: the whole project's) as sacct shows them."""
    if not 1 <= limit <= MAX_JOBS:
        raise Invalid(f"limit is 1 to {MAX_JOBS}.", field="limit")
    scope = (Scope(owner_only=True, user_id=principal.user_id) if project is None
             else scope_for(session, principal, project))
    window = _window(period, now)
    rows = []
    for j in repo.job_usage(session, scope, window, limit):
        elapsed, cores = ((j.elapsed, j.cores) if j.runs else
                          _unrecorded(j, window.as_of))
        rows.append(JobUsageRow(
            job_id=j.id, array_job_id=j.array_job_id, array_index=j.array_index, name=j.name,
            project=j.project, owner=j.owner, site=j.site, state=j.state,
            created_at=j.created_at, runs=j.runs, elapsed=elapsed, cores=cores,
            charge_su=_su(j.charged_milli - j.refunded_milli)))
    return JobUsageList(as_of=window.as_of, jobs=rows)


def _unrecorded(job: repo.JobUsage, as_of: datetime) -> tuple[int | None, int | None]:
    """(elapsed seconds, cores) of a job without a usage record (it ran before allocations
    were enforced, or runs now): from when the gateway saw it start and end, on the cores
    it asked for; None where that is unknown (it ended, but its end was never seen)."""
    if job.started_at is None or job.started_at > as_of:
        return 0, 0  # it has not run: as sacct shows a pending job
    end = job.ended_at
    if end is None or end > as_of:
        end = None if end is None and JobState(job.state).is_final else as_of
    elapsed = None if end is None else max(0, int((end - job.started_at).total_seconds()))
    return elapsed, requested(Resources.model_validate(job.resources)).cores


def daily_available(session: Session, principal: Principal, project: str | None,
                    period: Period, now: datetime) -> dict[int, list[tuple[int, float]]]:
    """Per allocation: (day since its start, change of its remaining SU that day) as of T,
    the points of its burn-down."""
    scope = scope_for(session, principal, project)
    as_of = _window(period, now).as_of
    series: dict[int, list[tuple[int, float]]] = {}
    for allocation_id, day, delta in repo.available_by_day(session, scope, as_of):
        series.setdefault(allocation_id, []).append((max(day, 0), _su(delta)))
    return series
