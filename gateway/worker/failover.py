"""Failover step (once per cycle): jobs stranded at a site down too long get a sibling
at another site (gateway.services.routing.failover)."""

from __future__ import annotations

import logging
from datetime import timedelta

from gateway.db.base import utcnow
from gateway.services.routing.failover import down_since_before, fail_over
from gateway.worker.context import CLAIM_BATCH, StepContext

log = logging.getLogger(__name__)


def fail_over_stranded(ctx: StepContext) -> bool:
    """True when some job got a new site (it can be claimed in this same cycle)."""
    after = timedelta(seconds=ctx.rt.settings.failover_after_seconds)
    now = utcnow()
    with ctx.rt.sessions() as session:  # the usual case: every site up, no lock taken
        if not down_since_before(session, now - after):
            return False
    with ctx.unit() as session:
        moved = fail_over(session, ctx.rt.sites, now, after, CLAIM_BATCH,
                          ctx.lifecycle.actor, ctx.rt.settings.allocations_enforced)
    if moved:
        log.info("failover: %d job(s) also routed away from a down site", moved)
    return bool(moved)
