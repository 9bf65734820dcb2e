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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import exists, or_, select
from sqlalchemy.orm import Session

from adapters.base import NativeState
from adapters.usage import UsageRecord
from gateway.accounting.charging import Charge, charge_for
from gateway.accounting.rates import Rate
from gateway.db.bank_models import Lien, Quote, RateCard, UsageRow
from gateway.db.models import Attempt, Job, User
from gateway.domain.states import FINAL_STATES, AttemptState
from gateway.repositories import rate_cards
from gateway.services import bank

ACTOR = "gateway (settlement)"
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
    held = exists().where(Lien.job_id == Job.id, Lien.status == "held")
    the_run = or_(Job.winner_attempt_id == Attempt.id, Job.winner_attempt_id.is_(None))
    rows = session.execute(
        select(Attempt.job_id, Attempt.id, Attempt.native_id, User.username,
               Attempt.started_at, Attempt.ended_at, Attempt.state)
        .join(Job, Job.id == Attempt.job_id).join(User, User.id == Job.owner_id)
        .where(Attempt.site_name == site, Attempt.native_id.is_not(None),
               Job.state.in_([s.value for s in FINAL_STATES]), held, the_run)
        .order_by(Job.finished_at, Attempt.id).limit(limit))
    return [RunToSettle(r[0], r[1], r[2] or "", r[3], r[4], r[5], AttemptState(r[6]))
            for r in rows]


def release_unrun(session: Session, now: datetime, limit: int = 500) -> int:
    """Release the liens of finished jobs no scheduler ever had (cancelled while waiting
    at the gateway, refused at submit, failed staging in); returns how many jobs."""
    submitted = exists().where(Attempt.job_id == Job.id, Attempt.native_id.is_not(None))
    job_ids = list(session.scalars(
        select(Job.id).where(Job.state.in_([s.value for s in FINAL_STATES]), ~submitted,
                             exists().where(Lien.job_id == Job.id, Lien.status == "held"))
        .limit(limit)))
    for job_id in job_ids:
        bank.release(session, job_id, now, ACTOR, "the job never reached a scheduler")
    return len(job_ids)


@dataclass(frozen=True)
class JobTerms:
    """What a job asked for and the rate it was quoted at, per site."""

    walltime_seconds: int
    cores: int
    finished_at: datetime | None
    rates: Mapping[str, Rate]


def terms(session: Session, job_id: str) -> JobTerms:
    """The job's walltime and cores, and each site's pinned rate (else the current one)."""
    job = session.get(Job, job_id)
    assert job is not None
    resources = job.spec.get("resources", {})
    rates = {site: rate_cards.rate_of(card) for site, card in session.execute(
        select(Quote.site_name, RateCard).join(RateCard, RateCard.id == Quote.rate_card_id)
        .where(Quote.job_id == job_id))}
    for site, card in rate_cards.current_all(session).items():
        rates.setdefault(site, rate_cards.rate_of(card))
    return JobTerms(int(resources.get("walltime", 3600)),
                    int(resources.get("ranks", 1)) * int(resources.get("threads_per_rank", 1)),
                    job.finished_at, rates)


def ready(runs: Sequence[RunToSettle], records: Sequence[UsageRecord],
          finished_at: datetime | None, now: datetime, deadline: timedelta) -> bool:
    """Whether a job can be settled now: every run that should have a record has one,
    or the deadline for records has passed."""
    have = {r.native_id for r in records}
    missing = [r for r in runs if r.native_id not in have
               and not (r.state in _NO_RECORD_NEEDED and r.started_at is None)]
    return not missing or (finished_at is not None and now - finished_at >= deadline)


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
            elapsed_seconds=max(0, elapsed), cores=cores, nodes=1, source=ESTIMATED,
            raw="no usage record came by the deadline: estimated from the attempt's "
                "start and end"))
    return made


def settle_job(session: Session, site: str, job_id: str, records: Sequence[UsageRecord],
               estimated: bool, now: datetime, refund_cap_milli: int) -> bank.Settled | None:
    """Store the job's records at `site` and settle its liens in this unit of work; None
    when another worker settled it first."""
    if not bank.held_liens(session, job_id):
        return None
    job_terms = terms(session, job_id)
    rate = job_terms.rates[site]
    charges: list[tuple[UsageRow, Charge]] = []
    for record in records:
        row = _stored(session, site, job_id, record, now, estimated and
                      record.source == ESTIMATED)
        charges.append((row, charge_for(record, rate, job_terms.walltime_seconds,
                                        refund_cap_milli)))
    return bank.settle(session, job_id, charges, now, ACTOR)


def _stored(session: Session, site: str, job_id: str, record: UsageRecord, now: datetime,
            estimated: bool) -> UsageRow:
    existing = session.scalar(select(UsageRow).where(
        UsageRow.site_name == site, UsageRow.native_id == record.native_id,
        UsageRow.run == record.run))
    if existing is not None:
        return existing
    row = UsageRow(site_name=site, native_id=record.native_id, run=record.run, job_id=job_id,
                   source=record.source, received_at=now, started_at=record.started_at,
                   ended_at=record.ended_at, elapsed_seconds=record.elapsed_seconds,
                   cores=record.cores, nodes=record.nodes, gpus=record.gpus,
                   memory_mb=record.memory_mb, state=record.state.value,
                   reason=record.reason, exit_code=record.exit_code, raw=record.raw,
                   estimated=estimated)
    session.add(row)
    session.flush()
    return row
