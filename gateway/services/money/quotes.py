"""Quotes: what a job would cost at each site it could run at, with the rate version
pinned, and the lien held for it at submit. Services flush; the caller commits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from gateway.accounting.rates import Rate, cost
from gateway.accounting.requested import requested
from gateway.accounting.units import su
from gateway.db.bank_models import Quote, RateCard
from gateway.domain.jobspec import JobSpec
from gateway.repositories.jobs.events import NewEvent
from gateway.repositories.money import bank_rows, fast_hold, rate_cards
from gateway.services.money import bank
from gateway.services.money.bank import InsufficientFunds, Payer, Refusal


@dataclass(frozen=True)
class SiteQuote:
    """A job's price at one site, at the rate card version it was made with."""

    site: str
    rate_card_id: int
    rate_version: int
    amount_milli: int


def price(spec: JobSpec, rate: Rate) -> int:
    """The job's price (milli-SU) at a site of `rate`: all it asks to hold
    (gateway.accounting.requested) for its whole walltime. No run of it that holds no
    more than that is charged more (settlement caps a run's time at that walltime)."""
    return cost(rate, requested(spec.resources))


def quote(session: Session, spec: JobSpec, sites: Sequence[str],
          cards: Mapping[str, RateCard] | None = None) -> list[SiteQuote]:
    """The job's price at each of `sites` at their current rate cards (`cards`, else read
    from the database), cheapest first."""
    found = []
    cards = cards if cards is not None else rate_cards.current_all(session)
    for site in sites:
        card = cards.get(site)
        if card is not None:
            found.append(SiteQuote(site, card.id, card.version,
                                   price(spec, rate_cards.rate_of(card))))
    return sorted(found, key=lambda q: (q.amount_milli, q.site))


def hold_for_submit(session: Session, job_id: str, payer: Payer, quotes: Sequence[SiteQuote],
                    now: datetime, actor: str) -> None:
    """Pin the job's quotes and hold a lien for the cheapest site its project can pay
    at. Raises InsufficientFunds naming the cheapest quote and what is available."""
    _require_quotes(quotes, payer)
    for q in quotes:
        bank_rows.add(session, Quote(job_id=job_id, site_name=q.site,
                                     rate_card_id=q.rate_card_id,
                                     amount_milli=q.amount_milli, quoted_at=now))
    session.flush()
    hold_cheapest(session, job_id, payer, quotes, now, actor)


def one_round_trip(session: Session) -> bool:
    """Whether `event_and_hold` can be used here (PostgreSQL)."""
    return session.connection().dialect.name == "postgresql"


def event_and_hold(session: Session, first_event: NewEvent, payer: Payer,
                   quotes: Sequence[SiteQuote], actor: str) -> None:
    """`hold_for_submit` for a job whose row is written and whose first event is not:
    on PostgreSQL the event, the quotes and (most often) the lien in one round trip."""
    _require_quotes(quotes, payer)
    cheapest = quotes[0]
    if not fast_hold.event_and_hold(
            session, first_event, payer.project_id,
            [(q.site, q.rate_card_id, q.amount_milli) for q in quotes], cheapest.site,
            cheapest.amount_milli):
        hold_cheapest(session, first_event.job_id, payer, quotes, first_event.at, actor)


def hold_cheapest(session: Session, job_id: str, payer: Payer, quotes: Sequence[SiteQuote],
                  now: datetime, actor: str) -> None:
    """Hold a lien (locking the allocations) for the cheapest of `quotes` the project can
    pay; raises the cheapest quote's InsufficientFunds when it can pay none."""
    _require_quotes(quotes, payer)
    refusals: list[InsufficientFunds] = []
    for q in quotes:
        try:
            bank.hold(session, job_id, payer, q.site, q.amount_milli, now, actor)
            return
        except InsufficientFunds as exc:
            refusals.append(exc)
    raise refusals[0]


def _require_quotes(quotes: Sequence[SiteQuote], payer: Payer) -> None:
    if not quotes:
        raise InsufficientFunds(
            f"No site this job could run at has a rate card yet; project "
            f"'{payer.project_name}' cannot be charged. Ask an administrator to check the "
            "site configurations.", Refusal(payer, None, 0, 0, None),
            project=payer.project_name, quote_su=su(0))
