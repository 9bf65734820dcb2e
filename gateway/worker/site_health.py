"""Site health: what the worker last saw of each site, recorded when it changes."""

from __future__ import annotations

import threading

from gateway.services.lifecycle.statuses import record_site_state
from gateway.services.sites.entry import SiteEntry
from gateway.worker.context import StepContext

UP, DOWN = "up", "down"


class SiteHealth:
    """Marks sites up or down; writes only changes (remembered per worker process)."""

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx
        self._seen: dict[str, tuple[str, str | None]] = {}
        # A site's two lanes (gateway.worker.lanes) may mark it at once.
        self._lock = threading.Lock()

    def mark(self, site: SiteEntry, state: str, reason: str | None) -> None:
        with self._lock:
            if self._seen.get(site.name) == (state, reason):
                return
            with self.ctx.unit() as session:
                record_site_state(session, site.name, state, reason)
            self._seen[site.name] = (state, reason)
