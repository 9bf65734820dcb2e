"""Gates step: once per cycle, before routing, let through the ACCEPTED jobs whose
dependencies are now satisfied and the array tasks their throttle has room for
(gateway.services.jobs.gates, which says why a crash at any point is safe); the routing
pass and the claims of this same cycle then take them."""

from __future__ import annotations

import logging

from gateway.services.jobs import gates as job_gates
from gateway.worker.context import StepContext

log = logging.getLogger(__name__)

# Jobs waiting for dependencies looked at per unit of work.
GATE_BATCH = 500


def open_gates(ctx: StepContext) -> bool:
    """True when a gate opened (the job may be routed and claimed now)."""
    with ctx.rt.sessions() as session:  # the usual case: nothing gated, no lock taken
        if not job_gates.anything_gated(session):
            return False
    actor = ctx.lifecycle.actor
    opened = 0
    after = None
    while True:
        with ctx.unit() as session:
            batch = job_gates.check_dependencies(session, actor, GATE_BATCH, after)
        opened += batch.opened
        if batch.after is None:
            break
        after = batch.after
    # After the dependencies: a task they let through this cycle may start at once.
    with ctx.rt.sessions() as session:
        arrays = job_gates.throttled_arrays(session)
    for array_id in arrays:
        with ctx.unit() as session:
            opened += job_gates.release_throttled(session, array_id, actor)
    if opened:
        log.info("gates: %d job(s) may start now", opened)
    return bool(opened)
