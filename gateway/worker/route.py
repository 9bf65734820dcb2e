"""Routing step: place again the `site: auto` jobs still waiting (ACCEPTED) at a site
that has stopped accepting jobs, with the same routing function the API admitted them
with (`gateway.scheduling.routing.route`; the metascheduler replaces only that)."""

from __future__ import annotations

import logging

from gateway.services.placement import closed_sites, replace_stranded
from gateway.worker.context import CLAIM_BATCH, StepContext

log = logging.getLogger(__name__)


def route_waiting(ctx: StepContext) -> bool:
    """True when a job moved (its new site can claim it in this same cycle)."""
    with ctx.rt.sessions() as session:  # the usual case: every site open, no lock taken
        closed = closed_sites(session, ctx.rt.sites)
    if not closed:
        return False
    with ctx.unit() as session:
        moved = replace_stranded(session, ctx.rt.sites, closed, CLAIM_BATCH)
    if moved:
        log.info("placed %d waiting job(s) at another site", moved)
    return bool(moved)
