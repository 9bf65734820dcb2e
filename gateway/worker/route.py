"""Routing step: once per cycle, before any site's steps. When jobs wait for a site, each
open site is asked once how busy it is (gateway.services.routing.site_snapshots: the live queue
for the forecaster, and whether it can be reached, recorded as its health); then one
routing pass places the pending `site: auto` jobs, oldest first, and the submit step
claims them at their sites in this same cycle. Each snapshot is recorded as the site's
load (gateway.services.routing.site_load) in a unit of its own, after the pass: site rows are
never locked while job rows are; and the jobs queued at those sites get their predicted
starts again (gateway.services.routing.predictions), in a unit of their own too. Why a job
is routed once and submitted once: gateway.services.routing.placement."""

from __future__ import annotations

import logging
from functools import partial

from gateway.services.routing.forecasting import build_forecaster
from gateway.services.routing.placement import open_sites, route_pending
from gateway.services.routing.predictions import announce_changes
from gateway.services.routing.site_load import LoadProbe, record_loads
from gateway.services.routing.site_snapshots import take_snapshots, unreachable
from gateway.worker.context import StepContext
from gateway.worker.periodic.prediction_refresh import PredictionRefresh
from gateway.worker.site_health import DOWN, UP, SiteHealth

log = logging.getLogger(__name__)

# Jobs routed per pass (one unit of work); a full pass asks for another cycle at once.
ROUTE_BATCH = 1000


def route_jobs(ctx: StepContext, health: SiteHealth | None = None,
               refresh: PredictionRefresh | None = None) -> bool:
    """True when a job was placed (its site can claim it in this same cycle). Without
    a pass, `refresh` asks the sites with queued jobs for their queues when due."""
    with ctx.rt.sessions() as session:  # the usual case: nothing waits, no lock taken
        names = open_sites(session, ctx.rt.sites)
    if names is None:
        if refresh is not None:
            refresh.run()
        return False
    if refresh is not None:
        refresh.asked(names, ctx.rt.clock())
    snapshots = take_snapshots(ctx.rt.sites, names)  # before any row is locked
    if health is not None:
        for snap in snapshots.values():
            if snap.unreachable is not None:
                health.mark(ctx.rt.sites.get(snap.name), DOWN, snap.unreachable)
            elif snap.reached:
                health.mark(ctx.rt.sites.get(snap.name), UP, None)
    probe = LoadProbe(partial(build_forecaster, snapshots=snapshots), snapshots)
    now = ctx.rt.clock()
    with ctx.unit() as session:
        result = route_pending(session, ctx.rt.sites, probe, ctx.holder.actor,
                               ROUTE_BATCH, now, unreachable(snapshots.values()),
                               ctx.rt.settings.allocations_enforced)
        loads = probe.loads(session, ctx.rt.sites, now)
    with ctx.unit() as session:
        record_loads(session, loads)
    with ctx.unit() as session:  # queued jobs' predicted starts, from the same snapshots
        announce_changes(session, ctx.rt.sites, snapshots,
                         ctx.rt.settings.prediction_change_seconds, now, ctx.holder.actor)
    if result.placed or result.failed:
        log.info("routing pass: %d job(s) placed, %d failed (no site can run them)",
                 result.placed, result.failed)
    return bool(result.placed)
