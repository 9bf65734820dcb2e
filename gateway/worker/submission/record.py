"""Recording submissions: the site's job ids committed in one unit of work, and the
test-only crash point between a scheduler taking a job and its id being committed."""

from __future__ import annotations

import os
import threading
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


class PassRecorder:
    """The quick units of one submission pass (batches, and single jobs with nothing to
    stage), committed together: once `batch` jobs wait, and when the last quick unit is
    done. In a burst on a site where each researcher is their own account, a pass holds
    one job of each of many researchers: a unit of work each was most of the pass's time
    (issue 33). Units that stage files commit their own, never held up by these."""

    def __init__(self, ctx: StepContext, site: SiteEntry, units: int, batch: int) -> None:
        self.ctx = ctx
        self.site = site
        self.batch = max(1, batch)
        self._left = units
        self._pending: list[Submitted] = []
        self._lock = threading.Lock()

    def done(self, placed: Sequence[Submitted]) -> None:
        """One quick unit's jobs (none when it failed): committed now if due."""
        with self._lock:
            self._pending.extend(placed)
            self._left -= 1
            take: list[Submitted] = []
            if len(self._pending) >= self.batch or self._left <= 0:
                take, self._pending = self._pending, []
        record_submitted(self.ctx, self.site, take)


def fault_after_submit() -> None:
    """Test-only crash point (off unless the env says `exit`): die like `kill -9` after
    the scheduler took the job and before its id is committed, to prove recovery adopts it."""
    if os.environ.get(FAULT_AFTER_SUBMIT_ENV) == "exit":
        os._exit(137)
