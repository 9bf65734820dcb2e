"""Settlement: a finished job's liens become charges from its sites' usage records.

Crash safety: the records are fetched first (a read at the site, safe to repeat), then
one unit of work per job stores them and posts every charge, refund and release. A
crash before that commit leaves the liens held and the next cycle does it all again; a
crash after it leaves nothing to do. Each job's held liens are locked first, so two
workers never settle one job twice, and each record is stored once per (site, native
id, run): a record seen again changes nothing.

When a job's records never come (accounting disabled or lost), its liens wait until
`usage_deadline` after the job finished; then each run that started is charged as
estimated from the attempt's own start and end (the site's clock, as its status said),
and the stored record is flagged `estimated`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table
from sqlalchemy.orm import Session

from adapters.base import NativeState
from adapters.usage import UsageRecord
from gateway.accounting.charging import Charge, charge_for
from gateway.accounting.rates import Rate
from gateway.accounting.requested import requested
from gateway.db.bank_models import Lien, UsageRow
from gateway.domain.states import AttemptState
from gateway.repositories import bulk
from gateway.repositories.jobs.rows import stored_resources
from gateway.repositories.money import bank_rows, rate_cards, usage_rows
from gateway.services.money import bank, ledger

ACTOR = "gateway (settlement)"
# Jobs settled per site and worker cycle, in one unit of work (one usage query per
# account at the site, a handful of statements at the database).
SETTLE_BATCH = 500
ESTIMATED = "estimate"
# Attempts that never reached the scheduler's accounting on their own terms: a hedge
# revoked before it started, a job deleted while pending (Grid Engine keeps no record).
_NO_RECORD_NEEDED = (AttemptState.REVOKED, AttemptState.CANCELLED)


@dataclass(frozen=True)
class RunToSettle:
    """One attempt of a finished job that holds liens: what to ask the site about."""

    job_id: str
    attempt_id: int
    native_id: str
    owner: str | None
    started_at: datetime | None
    ended_at: datetime | None
    state: AttemptState


def finished_with_liens(session: Session, site: str, limit: int) -> list[RunToSettle]:
    """Attempts at `site` (with a scheduler id) of finished jobs that still hold liens:
    the job's run (the attempt that started first), or any, if none ever started. A
    hedge's or failover's other attempts never started, so they cost nothing."""
    return [RunToSettle(job_id, attempt_id, native_id, owner, started, ended,
                        AttemptState(state))
            for job_id, attempt_id, native_id, owner, started, ended, state
            in usage_rows.finished_runs(session, site, limit)]


def release_unrun(session: Session, now: datetime, limit: int = 500) -> int:
    """Release the liens of finished jobs no scheduler ever had (cancelled while waiting
    at the gateway, refused at submit, failed staging in); returns how many jobs."""
    job_ids = usage_rows.unrun_with_liens(session, limit)
    for job_id in job_ids:
        bank.release(session, job_id, now, ACTOR, "the job never reached a scheduler")
    return len(job_ids)


@dataclass(frozen=True)
class JobTerms:
    """What a job asked for and the rate it was quoted at, per site."""

    walltime_seconds: int
    cores: int
    ended_at: datetime | None
    rates: Mapping[str, Rate]


def terms(session: Session, job_ids: Collection[str]) -> dict[str, JobTerms]:
    """Each job's walltime and cores, and each site's rate pinned by its quote (else the
    site's current rate)."""
    current = {site: rate_cards.rate_of(card)
               for site, card in rate_cards.current_all(session).items()}
    pinned: dict[str, dict[str, Rate]] = defaultdict(dict)
    for job_id, site, card in usage_rows.pinned_rates(session, job_ids):
        pinned[job_id][site] = rate_cards.rate_of(card)
    return {job_id: job_terms(spec, ended_at, {**current, **pinned[job_id]})
            for job_id, spec, ended_at in usage_rows.requests(session, job_ids)}


def job_terms(spec: Mapping[str, Any], ended_at: datetime | None,
              rates: Mapping[str, Rate]) -> JobTerms:
    """A job's terms from its stored spec: the walltime and cores its quote priced
    (gateway.accounting.requested). A run's time is charged up to that walltime, and a
    run whose record never came is estimated with those cores."""
    asked = requested(stored_resources(spec))
    return JobTerms(asked.seconds, asked.cores, ended_at, rates)


def charge(terms: JobTerms, site: str, record: UsageRecord, refund_cap_milli: int) -> Charge:
    """What one run of the job at `site` is charged: its usage record at the site's rate
    in `terms`, its time capped at the walltime the job asked for."""
    return charge_for(record, terms.rates[site], terms.walltime_seconds, refund_cap_milli)


def ready(runs: Sequence[RunToSettle], records: Sequence[UsageRecord],
          ended_at: datetime | None, now: datetime, deadline: timedelta) -> bool:
    """Whether a job can be settled now: every run that should have a record has one,
    or the deadline for records has passed."""
    have = {r.native_id for r in records}
    missing = [r for r in runs if r.native_id not in have
               and not (r.state in _NO_RECORD_NEEDED and r.started_at is None)]
    return not missing or (ended_at is not None and now - ended_at >= deadline)


def estimated_records(runs: Sequence[RunToSettle], records: Sequence[UsageRecord],
                      cores: int, walltime_seconds: int) -> list[UsageRecord]:
    """Records standing in for the runs whose own never came: the attempt's start to end
    (the walltime when its end is unknown); nothing for a run that never started."""
    have = {r.native_id for r in records}
    made = []
    for run in runs:
        if run.native_id in have or run.started_at is None:
            continue
        elapsed = (int((run.ended_at - run.started_at).total_seconds())
                   if run.ended_at else walltime_seconds)
        made.append(UsageRecord(
            native_id=run.native_id, run=0, state=NativeState.COMPLETED, reason=None,
            exit_code=None, started_at=run.started_at, ended_at=run.ended_at,
            elapsed=max(0, elapsed), cores=cores, nodes=1, source=ESTIMATED,
            raw="no usage record came by the deadline: estimated from the attempt's "
                "start and end"))
    return made


@dataclass(frozen=True)
class ToSettle:
    """One job's usage records at a site, ready to be charged."""

    job_id: str
    records: Sequence[UsageRecord]
    terms: JobTerms


@dataclass
class _Line:
    """A usage record being charged (bank.ChargedRecord): stored after its charge."""

    id: int
    job_id: str | None
    charged_milli: int | None = None
    refunded_milli: int = 0
    rule: str | None = None


def settle_jobs(session: Session, site: str, items: Sequence[ToSettle], now: datetime,
                refund_cap_milli: int) -> dict[str, bank.Settled]:
    """Store the jobs' records at `site` and settle their liens, all in this unit of
    work; a job another worker settled first is skipped (left out of the answer).

    A few statements whatever the number of jobs: the liens and allocations locked, the
    records already stored looked up, ids drawn for the new ones, which are then written
    with their charges in one bulk insert, followed by every ledger leg in another."""
    liens: dict[str, list[Lien]] = defaultdict(list)
    for lien in bank_rows.held_liens(session, [i.job_id for i in items]):
        liens[lien.job_id].append(lien)
    todo = [i for i in items if liens[i.job_id]]
    if not todo:
        return {}
    allocations = {a.id: a for a in ledger.lock(
        session, [lien.allocation_id for i in todo for lien in liens[i.job_id]])}
    lines, new = _lines(session, site, todo)
    settled = {}
    for item in todo:
        charges = [(lines[(r.native_id, r.run)], charge(item.terms, site, r, refund_cap_milli))
                   for r in item.records]
        pay_from = [allocations[a] for a in dict.fromkeys(
            lien.allocation_id for lien in liens[item.job_id])]
        settled[item.job_id] = bank.settle_locked(session, liens[item.job_id], pay_from,
                                                  charges, now, ACTOR)
    bulk.insert_rows(session.connection(), _USAGE, [
        _row(site, record, lines[(record.native_id, record.run)], now) for record in new])
    session.flush()  # the ledger's legs, the liens' and allocations' new state
    return settled


_USAGE = cast(Table, UsageRow.__table__)


def _lines(session: Session, site: str, items: Sequence[ToSettle]
           ) -> tuple[dict[tuple[str, int], _Line], list[UsageRecord]]:
    """A line per record, by (native id, run): those stored before with their charge (a
    replay: charged already), the new ones with a fresh id; and the new records."""
    wanted = {(r.native_id, r.run): (item.job_id, r) for item in items for r in item.records}
    lines = {(native_id, run): _Line(row_id, job_id, charged, refunded, rule)
             for row_id, native_id, run, job_id, charged, refunded, rule
             in usage_rows.stored(session, site, {n for n, _ in wanted})}
    new = [(key, job_id, record) for key, (job_id, record) in wanted.items()
           if key not in lines]
    for (key, job_id, _), row_id in zip(
            new, bulk.reserve_ids(session.connection(), _USAGE, len(new)), strict=True):
        lines[key] = _Line(row_id, job_id)
    return lines, [record for _, _, record in new]


def _row(site: str, record: UsageRecord, line: _Line, now: datetime) -> dict[str, Any]:
    return {"id": line.id, "site_name": site, "native_id": record.native_id,
            "run": record.run, "job_id": line.job_id, "source": record.source,
            "received_at": now, "started_at": record.started_at, "ended_at": record.ended_at,
            "elapsed": record.elapsed, "cores": record.cores,
            "nodes": record.nodes, "gpus": record.gpus, "memory_mb": record.memory_mb,
            "state": record.state.value, "reason": record.reason,
            "exit_code": record.exit_code, "raw": record.raw,
            "estimated": record.source == ESTIMATED, "charged_milli": line.charged_milli,
            "refunded_milli": line.refunded_milli, "rule": line.rule}
