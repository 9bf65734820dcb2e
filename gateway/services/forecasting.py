"""Forecasts for the routing pass, fed from the database: the waits the gateway has
observed at each site (attempts' submitted_at -> started_at) and each site's speed.

Interim: until the production forecaster (gateway.scheduling.forecaster) is wired in,
the wait is the empirical median and 95th percentile of the site's recent observed waits
(none observed: 0), and the run time the job's time limit over the site's speed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from statistics import median

from sqlalchemy.orm import Session

from gateway.repositories import attempts
from gateway.scheduling.ranking import Forecast
from gateway.services.placement import Pending
from gateway.services.site_snapshots import SiteSnapshot
from gateway.services.sites import SiteRegistry

# Observed waits read per pass: the most recent starts across all sites.
HISTORY = 2000


def _p95(values: Sequence[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


class ObservedWaits:
    """A `ranking.Forecaster` over observed waits (see module)."""

    def __init__(self, waits: Mapping[str, Sequence[float]], speeds: Mapping[str, float]
                 ) -> None:
        self.waits = waits
        self.speeds = speeds

    def forecast(self, job: Pending, site: str) -> Forecast:
        """The job's forecast at `site`."""
        runtime = job.spec.resources.walltime / self.speeds.get(site, 1.0)
        seen = self.waits.get(site) or ()
        if not seen:
            return Forecast(0.0, 0.0, runtime, 0.0, basis="no waits observed yet")
        middle, bound = median(seen), _p95(seen)
        return Forecast(middle, max(bound, middle), runtime, 0.0,
                        basis=f"{len(seen)} observed waits")

    def commit(self, job: Pending, site: str) -> None:
        """Nothing to count: observed waits do not see the pass's own jobs."""


def build_forecaster(session: Session, registry: SiteRegistry, jobs: Sequence[Pending],
                     now: datetime, snapshots: Mapping[str, SiteSnapshot] | None = None
                     ) -> ObservedWaits:
    """The forecaster for one routing pass (with `snapshots` bound, a
    `placement.ForecasterFactory`)."""
    waits: dict[str, list[float]] = {}
    for start in attempts.recent_starts(session, HISTORY):
        waits.setdefault(start.site_name, []).append(
            max(0.0, (start.started_at - start.submitted_at).total_seconds()))
    return ObservedWaits(waits, {e.name: e.speed for e in registry})
