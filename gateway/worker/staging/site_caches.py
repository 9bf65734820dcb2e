"""Prune the sites' staging caches: what no job directory holds and nobody used for
`site_cache_idle_days` (adapters.transfer.cache_prune), one site command per cache: one per
site, or one per account on a site that maps accounts (each has its own cache), of those
who ever had a job there. A site that cannot be reached is left until the next time.

A worker prunes each site on that site's follow lane (gateway.worker.lanes), at its first
pass there and then every SITE_CACHE_PRUNE_SECONDS: 40 distant sites pruned one after
the other would hold a starting worker's first cycle for as many connections."""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Iterable

from adapters.errors import AdapterError
from adapters.transfer.cache_prune import Pruned, prune
from gateway.domain.sizes import human_bytes
from gateway.repositories.jobs import attempts
from gateway.services.sites.entry import SiteEntry
from gateway.worker.context import StepContext

log = logging.getLogger(__name__)

# How often a worker prunes a site's staging caches (a site command per cache).
SITE_CACHE_PRUNE_SECONDS = 6 * 3600.0


def _accounts(site: SiteEntry, users: Collection[str] | None) -> list[str | None]:
    if site.mapped is not None:
        return [user for user in site.mapped if users is None or user in users]
    return [site.owner_only]


def prune_site_caches(sites: Iterable[SiteEntry], idle_seconds: float,
                      users: Collection[str] | None = None) -> Pruned:
    """Prune every cache of `sites`; what was removed, all told. On sites that map
    accounts, `users`: only these users' caches (None: every mapped account's)."""
    total = Pruned()
    for site in sites:
        for username in _accounts(site, users):
            cache = site.cache_dir(username)
            try:
                done = prune(site.adapter_for(username).files, cache,
                             idle_seconds=idle_seconds)
            except AdapterError as exc:
                # A site out of reach is so for its other accounts too: one wait, not many.
                log.info("site %s: caches not pruned now: %s", site.name, exc.message)
                break
            if done != Pruned():
                log.info("site %s: pruned %s: %d file(s) (%s), %d unpacked image(s), "
                         "%d partial upload(s)", site.name, cache, done.files,
                         human_bytes(done.bytes_freed), done.unpacked, done.partials)
            total = Pruned(total.files + done.files, total.unpacked + done.unpacked,
                           total.partials + done.partials,
                           total.bytes_freed + done.bytes_freed)
    return total


class SiteCachePruning:
    """When this worker next prunes each site's caches (see module)."""

    def __init__(self) -> None:
        # Each site's entry is written by that site's lane only.
        self._next: dict[str, float] = {}

    def step(self, ctx: StepContext, site: SiteEntry) -> bool:
        """Prune the site's caches if due (a site step: it never calls for another pass)."""
        idle_days = ctx.rt.settings.site_cache_idle_days
        now = time.monotonic()
        if idle_days <= 0 or now < self._next.get(site.name, 0.0):
            return False
        self._next[site.name] = now + SITE_CACHE_PRUNE_SECONDS
        users = None
        if site.mapped is not None:
            # Only those who ever had a job there can have a cache there: a certificate
            # site may list hundreds of researchers, each a connection to prune.
            with ctx.rt.sessions() as session:
                users = attempts.usernames_at(session, site.name)
        prune_site_caches([site], idle_days * 86400, users)
        return False
