"""Recording submissions: the site's job ids committed in one unit of work, and the
test-only crash point between a scheduler taking a job and its id being committed."""

from __future__ import annotations

import os
from collections.abc import Sequence

from gateway.services.lifecycle import submit_records
from gateway.services.lifecycle.submit_records import Submitted
from gateway.services.sites.entry import SiteEntry
from gateway.worker.context import StepContext

FAULT_AFTER_SUBMIT_ENV = "GRIDGATE_FAULT_AFTER_SUBMIT"


def record_submitted(ctx: StepContext, site: SiteEntry, placed: Sequence[Submitted]) -> None:
    """Commit the site's job ids and move the jobs to QUEUED, in one unit of work."""
    if not placed:
        return
    ctx.rt.metrics.submissions.labels(site.name, "submitted").inc(len(placed))
    with ctx.unit() as session:
        submit_records.record_submitted(session, site.name, placed, actor=ctx.holder.actor,
                                        metrics=ctx.rt.metrics)


def fault_after_submit() -> None:
    """Test-only crash point (off unless the env says `exit`): die like `kill -9` after
    the scheduler took the job and before its id is committed, to prove recovery adopts it."""
    if os.environ.get(FAULT_AFTER_SUBMIT_ENV) == "exit":
        os._exit(137)
