"""Prune the sites' staging caches: what no job directory holds and nobody used for
`site_cache_idle_days` (adapters.transfer.cache_prune), one site command per cache: one per
site, or one per account on a site that maps accounts (each has its own cache). A site
that cannot be reached is left until the next time."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from adapters.errors import AdapterError
from adapters.transfer.cache_prune import Pruned, prune
from gateway.domain.sizes import human_bytes
from gateway.services.sites.entry import SiteEntry

log = logging.getLogger(__name__)


def _accounts(site: SiteEntry) -> list[str | None]:
    if site.mapped is not None:
        return list(site.mapped)
    return [site.owner_only]


def prune_site_caches(sites: Iterable[SiteEntry], idle_seconds: float) -> Pruned:
    """Prune every cache of `sites`; what was removed, all told."""
    total = Pruned()
    for site in sites:
        for username in _accounts(site):
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
