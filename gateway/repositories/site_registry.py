"""The rows behind the configured sites: admins' enabled/drained flags and the status
the worker last saw. (The worker's own site-health writes are in its repositories.)"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from gateway.db.models import Site


def all_sites(session: Session) -> list[Site]:
    """Every site row."""
    return list(session.scalars(select(Site)))


def admission_flags(session: Session) -> list[tuple[str, bool, bool]]:
    """(name, enabled, drained) of every site, without loading the rows."""
    rows = session.execute(select(Site.name, Site.enabled, Site.drained)).all()
    return [(name, enabled, drained) for name, enabled, drained in rows]


def add(session: Session, site: Site) -> None:
    """Stage a new site row for the unit of work."""
    session.add(site)
