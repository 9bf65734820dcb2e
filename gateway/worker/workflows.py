"""Workflows step: once per cycle, first (so a step it opens is routed and claimed in
the same cycle), advance every running workflow, each in its own unit of work
(gateway.services.workflows.advance, which says why a crash at any point is safe)."""

from __future__ import annotations

import logging

from gateway.db.base import utcnow
from gateway.services.jobs.inputs import StagingLimits
from gateway.services.workflows import advance as workflow_advance
from gateway.services.workflows.advance import Submitting
from gateway.store.blobs import BlobStore
from gateway.worker.context import StepContext

log = logging.getLogger(__name__)

# Running workflows listed per query.
WORKFLOW_BATCH = 200


def advance_workflows(ctx: StepContext) -> bool:
    """True when some workflow changed (an opened step may be routed and claimed now)."""
    settings = ctx.rt.settings
    submitting = Submitting(ctx.rt.sites, StagingLimits.from_settings(settings),
                            settings.allocations_enforced, settings.job_array_max_tasks,
                            BlobStore(settings.store_dir))
    changed = 0
    after: str | None = None
    while True:
        with ctx.rt.sessions() as session:
            batch = workflow_advance.running_workflows(session, WORKFLOW_BATCH, after)
        for workflow_id in batch:
            try:
                with ctx.unit() as session:
                    changed += workflow_advance.advance_workflow(
                        session, workflow_id, ctx.lifecycle.actor, utcnow(), submitting)
            except Exception:  # one bad workflow never stops the others
                log.exception("workflow %s: advance failed", workflow_id)
        if len(batch) < WORKFLOW_BATCH:
            break
        after = batch[-1]
    if changed:
        log.info("workflows: %d advanced", changed)
    return bool(changed)
