"""Quotes: what a job would cost at each site it could run at, with the rate version
pinned, and the lien held for it at submit. Services flush; the caller commits."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from gateway.accounting.rates import Usage, cost
from gateway.accounting.units import su
from gateway.db.bank_models import Quote, RateCard
from gateway.domain.jobspec import JobSpec
from gateway.repositories import bank_rows, fast_hold, rate_cards
from gateway.repositories.fast_hold import LienTaken
from gateway.services import bank
from gateway.services.bank import InsufficientFunds, Payer


@dataclass(frozen=True)
class SiteQuote:
    """A job's price at one site, at the rate card version it was made with."""

    site: str
    rate_card_id: int
    rate_version: int
    amount_milli: int


def requested(spec: JobSpec) -> Usage:
    """What the job asks to hold: all its cores (ranks x threads) for its walltime."""
    r = spec.resources
    return Usage(seconds=r.walltime, cores=r.ranks * r.threads_per_rank, nodes=r.nodes,
                 memory_mb=r.memory_mb * r.nodes if r.memory_mb else None)


def quote(session: Session, spec: JobSpec, sites: Sequence[str],
          cards: Mapping[str, RateCard] | None = None) -> list[SiteQuote]:
    """The job's price at each of `sites` at their current rate cards (`cards`, else read
    from the database), cheapest first."""
    usage = requested(spec)
    found = []
    cards = cards if cards is not None else rate_cards.current_all(session)
    for site in sites:
        card = cards.get(site)
        if card is not None:
            found.append(SiteQuote(site, card.id, card.version,
                                   cost(rate_cards.rate_of(card), usage)))
    return sorted(found, key=lambda q: (q.amount_milli, q.site))


def hold_for_submit(session: Session, job_id: str, payer: Payer, quotes: Sequence[SiteQuote],
                    now: datetime, actor: str) -> None:
    """Pin the job's quotes and hold a lien for the cheapest site its project can pay
    at. Raises InsufficientFunds naming the cheapest quote and what is available."""
    _require_quotes(quotes, payer.project_name)
    if session.connection().dialect.name == "postgresql":
        cheapest = quotes[0]
        found = fast_hold.quote_and_hold(
            session, job_id, "", payer.project_id,
            [(q.site, q.rate_card_id, q.amount_milli) for q in quotes], cheapest.site,
            cheapest.amount_milli, now, actor)
        if found is not None and found.lien is not None:
            fast_hold.chain(session, found.lien)
            return
    else:
        for q in quotes:
            bank_rows.add(session, Quote(job_id=job_id, site_name=q.site,
                                         rate_card_id=q.rate_card_id,
                                         amount_milli=q.amount_milli, quoted_at=now))
        session.flush()
    hold_cheapest(session, job_id, payer, quotes, now, actor)


def project_and_hold(session: Session, job_id: str, user_id: str, project: str | None,
                     quotes: Sequence[SiteQuote], now: datetime, actor: str
                     ) -> tuple[Payer, LienTaken | None] | None:
    """Before the job row is written, on PostgreSQL: find the project to charge (named,
    and the user a member; else the user's personal one), pin the job's quotes and hold
    the cheapest quote's lien, in one round trip. Returns (payer, the lien taken): once
    the job row is written the caller chains a taken lien (`chain_lien`), or, when none
    was taken, calls `hold_cheapest` (a split across allocations, or a refusal). None,
    with nothing written, when this cannot be done here (another database, no quote, no
    such project): the caller takes the usual path."""
    if not quotes or session.connection().dialect.name != "postgresql":
        return None
    cheapest = quotes[0]
    found = fast_hold.quote_and_hold(
        session, job_id, user_id, project,
        [(q.site, q.rate_card_id, q.amount_milli) for q in quotes], cheapest.site,
        cheapest.amount_milli, now, actor)
    if found is None:
        return None
    return Payer(found.project_id, found.project_name), found.lien


def chain_lien(session: Session, lien: LienTaken) -> None:
    """Append a lien `project_and_hold` took to the audit chain (after the job's first
    link, so a job's story starts with its request)."""
    fast_hold.chain(session, lien)


def hold_cheapest(session: Session, job_id: str, payer: Payer, quotes: Sequence[SiteQuote],
                  now: datetime, actor: str) -> None:
    """Hold a lien (locking the allocations) for the cheapest of `quotes` the project can
    pay; raises the cheapest quote's InsufficientFunds when it can pay none."""
    _require_quotes(quotes, payer.project_name)
    refusals: list[InsufficientFunds] = []
    for q in quotes:
        try:
            bank.hold(session, job_id, payer, q.site, q.amount_milli, now, actor)
            return
        except InsufficientFunds as exc:
            refusals.append(exc)
    raise refusals[0]


def _require_quotes(quotes: Sequence[SiteQuote], project_name: str) -> None:
    if not quotes:
        raise InsufficientFunds(
            f"No site this job could run at has a rate card yet; project "
            f"'{project_name}' cannot be charged. Ask an administrator to check the "
            "site configurations.", project=project_name, quote_su=su(0))
