"""Queued jobs' predicted starts, kept current from each routing pass's queue snapshots.

A job's placement predicts when it starts (`decided_at + staging + likely wait` at the
site chosen: its `org.gridgate.job.placement` event). While the job then waits in that
site's queue, each routing pass that has a fresh snapshot of the site predicts it again:
the scheduler's own estimate for the job where the snapshot carries one (Slurm's
backfill plan, PBS, LSF), else the job's start in the forecaster's EASY projection of the
live queue (`forecasting.live_queue`, `queue_state.projected_starts`: the same queue
new jobs are routed against). A prediction that moved more than the threshold from the
last one announced (the placement's, at first) is announced: the attempt's column and
an `org.gridgate.job.prediction` event, in one transaction. A job that named its site
has no placement: its first prediction is announced with no previous one. Between
passes, gateway.worker.periodic.prediction_refresh asks the sites with queued jobs when due.

Cost: one statement per site with queued attempts and a snapshot, one projection of
that site's queue (only when a job there lacks the scheduler's estimate), and two
statements for all the pass's announcements.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.orm import Session

from adapters.snapshot import QueueSnapshot
from gateway.repositories.jobs import predictions
from gateway.repositories.jobs.predictions import Announcement, Waiting
from gateway.scheduling.queues.queue_state import projected_starts
from gateway.schemas.placements import predicted_start
from gateway.services.routing.forecasting import live_queue
from gateway.services.routing.site_snapshots import SiteSnapshot
from gateway.services.sites.entry import SiteEntry
from gateway.services.sites.registry import SiteRegistry

SCHEDULER = "scheduler"
PROJECTION = "queue projection"


@dataclass(frozen=True)
class Prediction:
    """When a queued job is predicted to start, and from what (`SCHEDULER`, `PROJECTION`)."""

    start: datetime
    basis: str


class SiteQueue:
    """One site's snapshot, answering for the gateway's jobs pending in it."""

    def __init__(self, entry: SiteEntry, queue: QueueSnapshot) -> None:
        self.entry = entry
        self.queue = queue
        self.pending = queue.pending
        self._index: dict[str, int] = {}
        for i, job in enumerate(self.pending):
            # A gateway job is named by its tag; its scheduler id is the surer key.
            if job.name is not None:
                self._index.setdefault(f"tag:{job.name}", i)
            self._index[f"id:{job.native_id}"] = i
        self._starts: list[float | None] | None = None

    def index(self, waiting: Waiting) -> int | None:
        """Where the attempt is in the pending jobs, or None when the snapshot lacks it."""
        if waiting.native_id is not None and f"id:{waiting.native_id}" in self._index:
            return self._index[f"id:{waiting.native_id}"]
        return self._index.get(f"tag:{waiting.tag}")

    def predict(self, index: int, last: int) -> Prediction | None:
        """The start of the pending job at `index` (`last`: the furthest index asked this
        pass, so the projection, made once, stops there)."""
        job, taken = self.pending[index], self.queue.taken_at
        if job.estimated_start is not None:
            return Prediction(max(job.estimated_start, taken), SCHEDULER)
        if self._starts is None:
            self._starts = projected_starts(live_queue(self.entry, self.queue),
                                            until_index=last)
        start = self._starts[index]
        if start is None or not math.isfinite(start):
            return None
        return Prediction(taken + timedelta(seconds=start), PROJECTION)


def site_changes(session: Session, site: SiteQueue, threshold: float) -> list[Announcement]:
    """The predicted starts at one site that moved more than `threshold` seconds from
    the ones last announced (reads the site's queued attempts: one statement)."""
    found: list[tuple[Waiting, int]] = []
    for waiting in predictions.queued_at(session, site.entry.name):
        index = site.index(waiting)
        if index is not None:
            found.append((waiting, index))
    last = max((index for _, index in found), default=0)
    changes = []
    for waiting, index in found:
        prediction = site.predict(index, last)
        if prediction is None:
            continue
        previous = waiting.announced
        if previous is None and waiting.decided_at is not None:
            previous = predicted_start(waiting.decided_at, waiting.candidates or (),
                                       (site.entry.name,))
        if previous is not None and \
                abs((prediction.start - previous).total_seconds()) <= threshold:
            continue
        changes.append(Announcement(waiting.attempt_id, waiting.job_id, site.entry.name,
                                    prediction.start, previous, prediction.basis))
    return changes


def announce_changes(session: Session, registry: SiteRegistry,
                     snapshots: Mapping[str, SiteSnapshot], threshold: float, now: datetime,
                     actor: str) -> int:
    """Announce every queued job's predicted start that moved more than `threshold`
    seconds at a site with a fresh snapshot; how many were. Flushes; the caller's unit
    of work commits."""
    names = set(registry.names())
    changes: list[Announcement] = []
    for name in sorted(snapshots):
        queue = snapshots[name].queue
        if queue is not None and name in names:
            changes += site_changes(session, SiteQueue(registry.get(name), queue), threshold)
    predictions.announce(session, changes, now, actor)
    return len(changes)
