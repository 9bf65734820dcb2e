"""Per-site snapshots for one routing pass: each open site asked once, all at once, for
its whole queue (`Adapter.queue_snapshot`: its cores and every pending and running job).
The answer feeds the forecaster (the live queue) and the site's recorded load
(gateway.services.routing.site_load); a site that cannot be
reached (its circuit breaker open, the connection or the command timing out, a host key
or login refused) is excluded from the pass, saying why, and so re-probed on every pass
until it answers again.

No database work here: the calls take a network round trip each, so the routing step
makes them before it opens its unit of work and locks any row.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from adapters.errors import AdapterError, AuthenticationFailed, HostKeyMismatch, SiteUnavailable
from adapters.snapshot import QueueSnapshot
from gateway.services.sites.entry import SiteEntry
from gateway.services.sites.registry import SiteRegistry

log = logging.getLogger(__name__)

# Errors that mean the site cannot be used now, rather than that one command failed.
UNREACHABLE = (SiteUnavailable, HostKeyMismatch, AuthenticationFailed)
# Sites asked at once.
THREADS = 8


@dataclass(frozen=True)
class SiteSnapshot:
    """What one site said (or why it said nothing) at the start of a pass."""

    name: str
    queue: QueueSnapshot | None = None  # None: the call failed
    unreachable: str | None = None  # why the site cannot be reached now

    @property
    def reached(self) -> bool:
        """Whether the site answered."""
        return self.queue is not None


def _probe(site: SiteEntry) -> SiteSnapshot:
    try:
        # A site-wide question: on a mapped site any account's adapter answers it.
        return SiteSnapshot(site.name, site.adapter.queue_snapshot())
    except UNREACHABLE as exc:
        return SiteSnapshot(site.name, unreachable=exc.message)
    except AdapterError as exc:
        # The site answered but its queue listing failed: usable, with no live queue.
        log.warning("site %s: no queue snapshot: %s", site.name, exc.message)
        return SiteSnapshot(site.name)


def take_snapshots(registry: SiteRegistry, names: Collection[str]) -> dict[str, SiteSnapshot]:
    """A snapshot of each of the named sites (the open ones), asked in parallel."""
    sites = [entry for entry in registry if entry.name in names]
    if len(sites) <= 1:
        return {site.name: _probe(site) for site in sites}
    with ThreadPoolExecutor(min(THREADS, len(sites)), thread_name_prefix="snapshot") as pool:
        return {snap.name: snap for snap in pool.map(_probe, sites)}


def unreachable(snapshots: Collection[SiteSnapshot]) -> dict[str, str]:
    """Site -> why it cannot be reached, for the sites that could not."""
    return {s.name: s.unreachable for s in snapshots if s.unreachable is not None}
