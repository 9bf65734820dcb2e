"""Who takes the leases: one worker, as the lifecycle steps see it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True)
class LeaseHolder:
    """A worker's id (the owner of the leases it takes, and in `actor` the author of its
    events) and how long its leases run: `lease` while it submits, `staging_lease` while
    it stages in or out (renewed between files)."""

    worker_id: str
    lease: timedelta
    staging_lease: timedelta

    @property
    def actor(self) -> str:
        """The events' actor for this worker's changes."""
        return f"worker {self.worker_id}"
