"""What every worker step gets: the runtime, this worker's lifecycle service, and the
unit of work (one transaction per step, committed at the step's end)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy.orm import Session

from gateway.db.engine import transaction
from gateway.runtime import Runtime
from gateway.services.lifecycle import Lifecycle
from gateway.services.sites.entry import SiteEntry

# At most this many jobs are claimed (or outputs collected) per site and step.
CLAIM_BATCH = 50


@dataclass(frozen=True)
class StepContext:
    rt: Runtime
    lifecycle: Lifecycle

    @classmethod
    def of(cls, rt: Runtime, worker_id: str) -> StepContext:
        settings = rt.settings
        return cls(rt, Lifecycle(worker_id, timedelta(seconds=settings.submit_lease_seconds),
                                 timedelta(seconds=settings.staging_lease_seconds),
                                 rt.metrics))

    def unit(self) -> AbstractContextManager[Session]:
        """One unit of work: commits when the block ends, rolls back on an error."""
        return transaction(self.rt.sessions)

    def renew(self, attempt_id: int) -> bool:
        """Extend this worker's lease on the attempt; False when it no longer holds it."""
        with self.unit() as session:
            return self.lifecycle.renew(session, attempt_id)

    def stop_requested(self, job_id: str, attempt_id: int) -> bool:
        with self.rt.sessions() as session:
            return self.lifecycle.stop_requested(session, job_id, attempt_id)


# A step of the worker's cycle at one site: True when it reached the site with work.
SiteStep = Callable[[StepContext, SiteEntry], bool]
