"""Routing step: once per cycle, before any site's steps, one routing pass places the
pending `site: auto` jobs (oldest first) over fresh per-site snapshots, with the
production forecaster; the submit step then claims them at their sites, in the same
cycle. Why a job is routed once and submitted once: gateway.services.placement."""

from __future__ import annotations

import logging

from gateway.services.forecasting import build_forecaster
from gateway.services.placement import route_pending
from gateway.worker.context import StepContext

log = logging.getLogger(__name__)

# Jobs routed per pass (one unit of work); a full pass asks for another cycle at once.
ROUTE_BATCH = 1000


def route_jobs(ctx: StepContext) -> bool:
    """True when a job was placed (its site can claim it in this same cycle)."""
    with ctx.unit() as session:
        result = route_pending(session, ctx.rt.sites, build_forecaster, ctx.lifecycle.actor,
                               ROUTE_BATCH, ctx.rt.clock())
    if result.placed or result.failed:
        log.info("routing pass: %d job(s) placed, %d failed (no site can run them)",
                 result.placed, result.failed)
    return bool(result.placed)
