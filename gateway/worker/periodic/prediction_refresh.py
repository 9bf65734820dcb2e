"""Queued jobs' predicted starts while no job waits for routing.

The routing step predicts queued jobs' starts again from each pass's queue snapshots
(gateway.services.routing.predictions), but a pass runs only while some `site: auto` job
waits for one: on a gateway where jobs only wait in their sites' queues, nothing would
ask the sites. So, between passes, a site with queued attempts is asked for its queue
again once `prediction_refresh_seconds` passed since this worker last asked it (by a
pass or here; asking a site that cannot be reached counts too, so a site that is down
costs one try per interval, not one per cycle), or since it started: a worker that
starts polls every site's jobs anyway, and need not ask every queue at once besides.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from gateway.repositories.jobs import predictions
from gateway.services.routing.predictions import announce_changes
from gateway.services.routing.site_snapshots import take_snapshots
from gateway.worker.context import StepContext


class PredictionRefresh:
    """When this worker last asked each site for its queue (see module)."""

    def __init__(self, ctx: StepContext) -> None:
        self.ctx = ctx
        self._asked: dict[str, datetime] = {}
        self._started: datetime | None = None

    def asked(self, names: Iterable[str], at: datetime) -> None:
        """The sites a routing pass asked at `at`."""
        self._asked.update(dict.fromkeys(names, at))

    def run(self) -> int:
        """Ask the sites that are due, and announce their queued jobs' predicted starts
        that moved beyond the threshold; how many were announced."""
        rt = self.ctx.rt
        now, every = rt.clock(), rt.settings.prediction_refresh_seconds
        if self._started is None:
            self._started = now
        with rt.sessions() as session:
            waiting = predictions.sites_with_queued(session)
        known = set(rt.sites.names())
        due = [name for name in waiting if name in known
               and (now - self._asked.get(name, self._started)).total_seconds() >= every]
        if not due:
            return 0
        self.asked(due, now)
        snapshots = take_snapshots(rt.sites, due)
        with self.ctx.unit() as session:
            return announce_changes(session, rt.sites, snapshots,
                                    rt.settings.prediction_change_seconds, rt.clock(),
                                    self.ctx.holder.actor)
