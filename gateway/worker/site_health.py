"""Site health: what the worker last saw of each site, recorded when it changes."""

from __future__ import annotations

from gateway.services.lifecycle import record_site_state
from gateway.services.sites.entry import SiteEntry
from gateway.worker.context import StepContext

UP, DOWN = "up", "down"


class SiteHealth:
    """Marks sites up or down; writes only changes (remembered per worker process)."""

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx
        self._seen: dict[str, tuple[str, str | None]] = {}

    def mark(self, site: SiteEntry, state: str, reason: str | None) -> None:
        if self._seen.get(site.name) == (state, reason):
            return
        with self.ctx.unit() as session:
            record_site_state(session, site.name, state, reason)
        self._seen[site.name] = (state, reason)
