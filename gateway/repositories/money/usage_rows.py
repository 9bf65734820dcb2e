"""Usage records as stored, and what settlement reads to charge finished jobs."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy import exists, or_, select
from sqlalchemy.orm import Session

from gateway.db.bank_models import Lien, Quote, RateCard, UsageRow
from gateway.db.models import Attempt, Job, User
from gateway.domain.states import FINAL_STATES

_FINAL = [s.value for s in FINAL_STATES]
_HELD = exists().where(Lien.job_id == Job.id, Lien.status == "held")


def finished_runs(session: Session, site: str, limit: int
                  ) -> list[tuple[str, int, str, str | None, datetime | None,
                                  datetime | None, str]]:
    """(job id, attempt id, native id, owner's username, started, ended, attempt state)
    of attempts at `site` with a scheduler id, of finished jobs that still hold liens: the
    job's run (its attempt that started first), or any, if none ever started."""
    the_run = or_(Job.winner_attempt_id == Attempt.id, Job.winner_attempt_id.is_(None))
    rows = session.execute(
        select(Attempt.job_id, Attempt.id, Attempt.native_id, User.username,
               Attempt.started_at, Attempt.ended_at, Attempt.state)
        .join(Job, Job.id == Attempt.job_id).join(User, User.id == Job.owner_id)
        .where(Attempt.site_name == site, Attempt.native_id.is_not(None),
               Job.state.in_(_FINAL), _HELD, the_run)
        .order_by(Job.ended_at, Attempt.id).limit(limit))
    return [(r[0], r[1], r[2] or "", r[3], r[4], r[5], str(r[6])) for r in rows]


def unrun_with_liens(session: Session, limit: int) -> list[str]:
    """Finished jobs that hold liens and never reached a scheduler."""
    submitted = exists().where(Attempt.job_id == Job.id, Attempt.native_id.is_not(None))
    return list(session.scalars(
        select(Job.id).where(Job.state.in_(_FINAL), ~submitted, _HELD).limit(limit)))


def pinned_rates(session: Session, job_ids: Collection[str]
                 ) -> list[tuple[str, str, RateCard]]:
    """(job id, site, rate card) of each quote of these jobs."""
    return [(job_id, site, card) for job_id, site, card in session.execute(
        select(Quote.job_id, Quote.site_name, RateCard)
        .join(RateCard, RateCard.id == Quote.rate_card_id)
        .where(Quote.job_id.in_(list(job_ids))))]


def requests(session: Session, job_ids: Collection[str]
             ) -> list[tuple[str, dict[str, Any], datetime | None]]:
    """(job id, spec, finished at) of these jobs."""
    return [(job_id, spec, finished) for job_id, spec, finished in session.execute(
        select(Job.id, Job.spec, Job.ended_at).where(Job.id.in_(list(job_ids))))]


def stored(session: Session, site: str, native_ids: Collection[str]
           ) -> list[tuple[int, str, int, str | None, int | None, int, str | None]]:
    """(id, native id, run, job id, charged, refunded, rule) of the site's stored records
    of these native ids."""
    return [(r[0], r[1], r[2], r[3], r[4], r[5], r[6]) for r in session.execute(
        select(UsageRow.id, UsageRow.native_id, UsageRow.run, UsageRow.job_id,
               UsageRow.charged_milli, UsageRow.refunded_milli, UsageRow.rule)
        .where(UsageRow.site_name == site, UsageRow.native_id.in_(list(native_ids))))]
