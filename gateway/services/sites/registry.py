"""`SiteRegistry`: every site this gateway can submit to, by name, with the admission
flags and rate cards their database rows hold."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy.orm import Session, sessionmaker

from gateway.db.engine import transaction
from gateway.domain.errors import Invalid
from gateway.repositories import sites as site_rows
from gateway.repositories.money import rate_cards
from gateway.repositories.sites import Admission
from gateway.services.sites.entry import SiteEntry
from gateway.services.sites.local_host import local_site
from gateway.settings import Settings

if TYPE_CHECKING:
    from adapters.ssh.pool import TransportPool
    from gateway.db.bank_models import RateCard
    from gateway.db.models import Site
    from gateway.services.sites.certificates import CertificateSigner

log = logging.getLogger(__name__)

# Enabled/drained flags change rarely; submissions may see them this many seconds late.
ADMISSION_TTL_SECONDS = 2.0


class SiteRegistry:
    """Name -> configured site. Enabled/drained flags live in the database."""

    def __init__(self, entries: list[SiteEntry], *,
                 initially_drained: set[str] | None = None) -> None:
        self._entries = {entry.name: entry for entry in entries}
        self._initially_drained = initially_drained or set()
        self._pool: TransportPool[Any] | None = None
        self._admission: tuple[float, dict[str, Admission]] = (0.0, {})
        # Each site's current rate card, as `sync` made sure of it (a site's rate changes
        # only with its config, which the gateway reads at start).
        self.rate_cards: dict[str, RateCard] = {}

    @classmethod
    def from_settings(cls, settings: Settings, pool: TransportPool[Any] | None = None,
                      signer: CertificateSigner | None = None) -> SiteRegistry:
        """The local site (unless disabled) and every reachable site configured in
        `settings.site_configs_dir`; descriptive (seed) configs are never connected.
        Remote sites are reached over SSH, or through `pool` when one is given (tests
        pass replaying transports); the registry closes it. `signer` signs the
        certificates of sites whose researchers log in as themselves."""
        entries = [local_site(settings)] if settings.local_site_enabled else []
        drained: set[str] = set()
        if settings.site_configs_dir is not None:
            from adapters.ssh import SshTransportPool
            from gateway.services.sites.remote import remote_site
            from gateway.siteconfig import SiteState, load_site_configs

            pool = pool if pool is not None else SshTransportPool(
                settings.ssh_idle_connections_per_site)
            for config in load_site_configs(settings.site_configs_dir):
                if config.descriptive:
                    continue
                entries.append(remote_site(config, settings, pool, signer))
                if config.state == SiteState.DRAINED:
                    drained.add(config.name)
        registry = cls(entries, initially_drained=drained)
        registry._pool = pool
        return registry

    def close(self) -> None:
        """Close the SSH connections of remote sites."""
        if self._pool is not None:
            self._pool.close()

    def __iter__(self) -> Iterator[SiteEntry]:
        return iter(self._entries.values())

    def names(self) -> list[str]:
        return sorted(self._entries)

    def get(self, name: str) -> SiteEntry:
        try:
            return self._entries[name]
        except KeyError:
            known = ", ".join(self.names()) or "none"
            raise Invalid(f"Unknown site '{name}'. Known sites: {known}.", field="site") from None

    def admission(self, session: Session) -> Mapping[str, Admission]:
        """Each site's enabled/drained flags, read at most every ADMISSION_TTL_SECONDS."""
        expires, value = self._admission
        now = time.monotonic()
        if now < expires:
            return value
        value = site_rows.admissions(session)
        self._admission = (now + ADMISSION_TTL_SECONDS, value)
        return value

    def rows(self, session: Session) -> dict[str, Site]:
        """The database row of each site, by name (flags and last seen status)."""
        return {row.name: row for row in site_rows.all_sites(session)}

    def sync(self, sessions: sessionmaker[Session]) -> None:
        """Make sure every configured site has a row; keep admins' enabled/drained flags."""
        configured = [site_rows.ConfiguredSite(
            entry.name, entry.kind,
            {"description": entry.description, "max_jobs": entry.max_jobs},
            drained_when_new=entry.name in self._initially_drained) for entry in self]
        with transaction(sessions) as session:
            site_rows.ensure_rows(session, configured)
            for entry in self:
                card = rate_cards.ensure_current(session, entry.name, entry.rate)
                session.expunge(card)
                self.rate_cards[entry.name] = card
