"""The statements behind the wait report: each job's wait from its creation at the
gateway to the start of its run (its winning attempt), per site and over every site, as
of a time T. Aggregates in the database, never rows loaded into Python."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, case, func, or_, select
from sqlalchemy.orm import Session

from gateway.accounting.report_math import rank_offset
from gateway.db.models import Attempt, Job
from gateway.repositories.money.reports import Scope, Window, seconds_between


@dataclass(frozen=True)
class WaitTotals:
    """Waits of one site's started jobs: how many, and the sums the expansion factor needs
    (waits and runs of the jobs that finished by T)."""

    site: str
    jobs: int
    wait_seconds: float
    finished: int
    finished_wait_seconds: float
    run_seconds: float


def _started(session: Session, scope: Scope, window: Window) -> Any:
    """(site, wait, run) of each job's winning attempt started by T, as a subquery: wait
    from the job's creation to the attempt's start, run from its start to its end (run is
    null while it runs at T), both on the gateway's clock."""
    wait = seconds_between(session, Attempt.started_at, Job.created_at)
    finished = and_(Attempt.ended_at.is_not(None), Attempt.ended_at <= window.as_of)
    ran_for = seconds_between(session, Attempt.ended_at, Attempt.started_at)
    run = case((finished, ran_for), else_=None)
    query = (select(Attempt.site_name.label("site"), wait.label("wait"), run.label("run"))
             .join(Job, and_(Job.id == Attempt.job_id, Job.winner_attempt_id == Attempt.id))
             .where(Attempt.started_at.is_not(None), Attempt.started_at <= window.as_of,
                    scope.jobs()))
    if window.since is not None:
        query = query.where(Attempt.started_at >= window.since)
    if window.until is not None:
        query = query.where(Attempt.started_at < window.until)
    if window.states:
        query = query.where(Job.state.in_(list(window.states)))
    return query.subquery()


Quantiles = dict[tuple[str | None, float], float]


def _sums(sub: Any) -> list[Any]:
    ran = sub.c.run.is_not(None)
    return [func.count().label("n"), func.coalesce(func.sum(sub.c.wait), 0).label("w"),
            func.count(sub.c.run).label("ran"),
            func.coalesce(func.sum(case((ran, sub.c.wait), else_=0)), 0).label("wr"),
            func.coalesce(func.sum(sub.c.run), 0).label("r")]


def _totals(row: Any) -> WaitTotals:
    return WaitTotals(row.site, int(row.n), float(row.w), int(row.ran), float(row.wr),
                      float(row.r))


def wait_figures(session: Session, scope: Scope, window: Window,
                 quantiles: Sequence[float]) -> tuple[list[WaitTotals], Quantiles]:
    """Per site: started jobs, total wait, the waits and runs of those finished; and the
    nearest-rank wait at each quantile per site and over every site (site None).

    On PostgreSQL one pass: percentile_disc is the nearest rank, ROLLUP adds the row of
    every site. Elsewhere the sums, then a window function ranking the waits."""
    sub = _started(session, scope, window)
    if session.get_bind().dialect.name == "postgresql":
        ranks = [func.percentile_disc(q).within_group(sub.c.wait).label(f"q{i}")
                 for i, q in enumerate(quantiles)]
        totals, found = [], {}
        for row in session.execute(select(sub.c.site, *_sums(sub), *ranks)
                                   .group_by(func.rollup(sub.c.site)).order_by(sub.c.site)):
            if row.site is not None:
                totals.append(_totals(row))
            if row.n:
                found.update({(row.site, q): float(getattr(row, f"q{i}"))
                              for i, q in enumerate(quantiles)})
        return totals, found
    totals = [_totals(row) for row in session.execute(
        select(sub.c.site, *_sums(sub)).group_by(sub.c.site).order_by(sub.c.site))]
    counts: dict[str | None, int] = {t.site: t.jobs for t in totals}
    counts[None] = sum(t.jobs for t in totals)
    return totals, _ranked(session, sub, counts, quantiles)


def _ranked(session: Session, sub: Any, counts: dict[str | None, int],
            quantiles: Sequence[float]) -> Quantiles:
    """The waits at the quantiles' nearest ranks, ranked by a window function."""
    found: Quantiles = {}
    wanted = {(site, q): offset for site, n in counts.items() for q in quantiles
              if (offset := rank_offset(n, q)) is not None}
    if not wanted:
        return found
    by_site = func.row_number().over(partition_by=sub.c.site, order_by=sub.c.wait)
    overall_rank = func.row_number().over(order_by=sub.c.wait)
    ranked = select(sub.c.site, sub.c.wait, by_site.label("in_site"),
                    overall_rank.label("in_all")).subquery()
    picks = [and_(ranked.c.site == site, ranked.c.in_site == offset + 1) if site is not None
             else ranked.c.in_all == offset + 1 for (site, _), offset in wanted.items()]
    for row in session.execute(select(ranked).where(or_(*picks))):
        for (site, q), offset in wanted.items():
            rank = row.in_all if site is None else row.in_site
            if rank == offset + 1 and site in (None, row.site):
                found[(site, q)] = float(row.wait)
    return found
