"""Rate cards: each site's prices, one row per version (a quote pins its version)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.accounting.rates import Rate
from gateway.db.bank_models import RateCard


def rate_of(card: RateCard) -> Rate:
    """The pure rate of a stored card."""
    return Rate(card.core_hour_milli, card.gb_hour_milli, card.gpu_hour_milli,
                card.node_hour_milli, card.minimum_milli)


def current(session: Session, site: str) -> RateCard | None:
    """The site's newest rate card."""
    return session.scalars(select(RateCard).where(RateCard.site_name == site)
                           .order_by(RateCard.version.desc())).first()


def current_all(session: Session) -> dict[str, RateCard]:
    """Every site's newest rate card, by site."""
    newest: dict[str, RateCard] = {}
    for card in session.scalars(select(RateCard).order_by(RateCard.version)):
        newest[card.site_name] = card
    return newest


def ensure_current(session: Session, site: str, rate: Rate) -> RateCard:
    """The site's current card, a new version when `rate` differs from the newest."""
    card = current(session, site)
    if card is not None and rate_of(card) == rate:
        return card
    card = RateCard(site_name=site, version=(card.version + 1) if card else 1,
                    core_hour_milli=rate.core_hour_milli, gb_hour_milli=rate.gb_hour_milli,
                    gpu_hour_milli=rate.gpu_hour_milli, node_hour_milli=rate.node_hour_milli,
                    minimum_milli=rate.minimum_milli)
    session.add(card)
    session.flush()
    return card
