"""Site rows: admission flags (enabled, drained), health state, and the rows every
configured site keeps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import case, or_, select, update
from sqlalchemy.orm import Session

from gateway.db.base import utcnow
from gateway.db.models import Site


@dataclass(frozen=True)
class Admission:
    """Whether a site takes new jobs, from its row."""

    enabled: bool
    drained: bool

    @property
    def accepting(self) -> bool:
        return self.enabled and not self.drained


CLOSED = Admission(enabled=False, drained=False)


@dataclass(frozen=True)
class ConfiguredSite:
    """What the configuration says about a site's row."""

    name: str
    kind: str
    config: Mapping[str, Any]
    # A config's `state: drained` applies once, to a new row; admins' flags win after.
    drained_when_new: bool


def all_sites(session: Session) -> list[Site]:
    """Every site row (flags and the state the worker last saw)."""
    return list(session.scalars(select(Site)))


def admissions(session: Session) -> dict[str, Admission]:
    """Every site's enabled/drained flags."""
    rows = session.execute(select(Site.name, Site.enabled, Site.drained)).all()
    return {name: Admission(enabled, drained) for name, enabled, drained in rows}


def lock_admission(session: Session, name: str) -> Admission | None:
    """The site's flags, its row locked until the unit of work ends (serializes claimers
    of one site, so max_jobs holds); None when there is no row."""
    row = session.get(Site, name, with_for_update=True)
    return None if row is None else Admission(row.enabled, row.drained)


def set_state(session: Session, name: str, state: str, reason: str | None) -> str | None:
    """Record the site's health as the worker last saw it (and since when, on a change);
    returns the state recorded before (None for a site without a row). The row is locked
    until the unit of work ends, so of two workers seeing one change, one sees it as a
    change."""
    before = session.execute(select(Site.state).where(Site.name == name)
                             .with_for_update()).scalar()
    changed = or_(Site.state != state, Site.state_since.is_(None))
    session.execute(update(Site).where(Site.name == name)
                    .values(state=state, reason=reason,
                            state_since=case((changed, utcnow()), else_=Site.state_since)))
    return before


def lift_ban(session: Session, name: str, at: datetime) -> None:
    """Record that an admin lifted the site's black-hole ban at `at`."""
    session.execute(update(Site).where(Site.name == name).values(ban_lifted_at=at))


def record_load(session: Session, name: str, load: Mapping[str, Any],
                taken_at: datetime) -> None:
    """Record how busy the site was at a queue snapshot taken at `taken_at`, unless a
    newer snapshot is already recorded (workers' passes may finish out of order)."""
    older = or_(Site.load_at.is_(None), Site.load_at < taken_at)
    session.execute(update(Site).where(Site.name == name, older)
                    .values(load=dict(load), load_at=taken_at))


def ensure_rows(session: Session, sites: Sequence[ConfiguredSite]) -> None:
    """Give every configured site a row; refresh kind and config, keep admins' flags."""
    existing = {s.name: s for s in session.scalars(select(Site))}
    for site in sites:
        row = existing.get(site.name)
        if row is None:
            session.add(Site(name=site.name, kind=site.kind, config=dict(site.config),
                             state="up", drained=site.drained_when_new))
        else:
            row.kind, row.config = site.kind, dict(site.config)
    session.flush()
